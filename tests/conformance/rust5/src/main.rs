//! The official RocketMQ 5.x Rust client (crates.io `rocketmq`, apache/rocketmq-clients/rust) against a
//! gRPC endpoint: COUNT plain sends, FIFO sends of several message groups interleaved, then a
//! SimpleConsumer that receives (and acks) all of them, then receives once more from the empty queues.
//!
//!     scenario ENDPOINT PLAIN_TOPIC FIFO_TOPIC CONSUMER_GROUP COUNT GROUPS PER_GROUP SECONDS
//!
//! GROUPS is a comma-separated list of message groups; message i of group g has the body "g#i".
//! Prints one JSON document as the last stdout line (see tests/conformance/polyglot5.py). The client's
//! send receipt carries the message id only (no queue, no offset).

use std::time::{Duration, Instant};

use rocketmq::conf::{ClientOption, ProducerOption, SimpleConsumerOption};
use rocketmq::model::common::{FilterExpression, FilterType};
use rocketmq::model::message::MessageBuilder;
use rocketmq::{Producer, SimpleConsumer};

fn quote(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn object(fields: &[(&str, String)]) -> String {
    let body: Vec<String> = fields.iter().map(|(k, v)| format!("{}:{}", quote(k), v)).collect();
    format!("{{{}}}", body.join(","))
}

#[derive(Default)]
struct Report {
    plain: Vec<String>,
    fifo: Vec<String>,
    received: Vec<String>,
    errors: Vec<String>,
    /// how long (seconds) the last receive, on empty queues, took to say "no message"
    empty_wait: f64,
}

impl Report {
    fn json(&self) -> String {
        let list = |items: &Vec<String>| format!("[{}]", items.join(","));
        let errors: Vec<String> = self.errors.iter().map(|e| quote(e)).collect();
        object(&[
            ("client", quote("rocketmq (rust) 5.0.0")),
            ("plain", list(&self.plain)),
            ("fifo", list(&self.fifo)),
            ("received", list(&self.received)),
            ("errors", list(&errors)),
            ("emptyWait", format!("{:.3}", self.empty_wait)),
        ])
    }
}

fn client_option(endpoint: &str) -> ClientOption {
    let mut option = ClientOption::default();
    option.set_access_url(endpoint);
    option.set_enable_tls(false); // the endpoint under test is plaintext
    option.set_timeout(Duration::from_secs(10));
    option.set_long_polling_timeout(Duration::from_secs(3));
    option
}

async fn send(producer: &Producer, topic: &str, body: String, group: Option<&str>) -> Result<String, String> {
    let builder = match group {
        Some(g) => MessageBuilder::fifo_message_builder(topic, body.clone().into_bytes(), g),
        None => MessageBuilder::builder().set_topic(topic).set_body(body.clone().into_bytes()),
    };
    let message = builder.set_tag("TagA").build().map_err(|e| format!("{e:?}"))?;
    let receipt = producer.send(message).await.map_err(|e| format!("{e:?}"))?;
    let mut fields = vec![("messageId", quote(receipt.message_id())), ("body", quote(&body))];
    if let Some(g) = group {
        fields.push(("group", quote(g)));
    }
    Ok(object(&fields))
}

async fn produce(endpoint: &str, out: &mut Report, plain: &str, fifo: &str, count: usize, groups: &[&str],
                 per_group: usize) -> Result<(), String> {
    let mut option = ProducerOption::default();
    option.set_topics(vec![plain, fifo]);
    let mut producer = Producer::new(option, client_option(endpoint)).map_err(|e| format!("{e:?}"))?;
    producer.start().await.map_err(|e| format!("{e:?}"))?;
    for i in 0..count {
        match send(&producer, plain, format!("p-{i}"), None).await {
            Ok(s) => out.plain.push(s),
            Err(e) => out.errors.push(format!("plain {i}: {e}")),
        }
    }
    for i in 0..per_group {
        for g in groups {
            match send(&producer, fifo, format!("{g}#{i}"), Some(g)).await {
                Ok(s) => out.fifo.push(s),
                Err(e) => out.errors.push(format!("fifo {g}#{i}: {e}")),
            }
        }
    }
    producer.shutdown().await.map_err(|e| format!("{e:?}"))
}

async fn receive_once(consumer: &SimpleConsumer, out: &mut Report, topic: &str) {
    let all = FilterExpression::new(FilterType::Tag, "*");
    let views = match consumer.receive_with(topic, &all, 16, Duration::from_secs(20)).await {
        Ok(views) => views,
        Err(e) => {
            let text = format!("{e:?}");
            if !text.contains("MessageNotFound") && !text.contains("MESSAGE_NOT_FOUND") {
                out.errors.push(format!("receive: {text}"));
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            return;
        }
    };
    for v in views {
        out.received.push(object(&[
            ("messageId", quote(v.message_id())),
            ("topic", quote(v.topic())),
            ("body", quote(&String::from_utf8_lossy(v.body()))),
            ("group", quote(v.message_group().unwrap_or(""))),
            ("attempt", v.delivery_attempt().to_string()),
        ]));
        if let Err(e) = consumer.ack(&v).await {
            out.errors.push(format!("ack {}: {e:?}", v.message_id()));
        }
    }
}

async fn consume(endpoint: &str, out: &mut Report, group: &str, topics: &[&str], want: usize,
                 seconds: f64) -> Result<(), String> {
    let mut option = SimpleConsumerOption::default();
    option.set_topics(topics.to_vec());
    option.set_consumer_group(group);
    let mut consumer = SimpleConsumer::new(option, client_option(endpoint)).map_err(|e| format!("{e:?}"))?;
    consumer.start().await.map_err(|e| format!("{e:?}"))?;
    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
    let mut turn = 0;
    while out.received.len() < want && Instant::now() < deadline {
        receive_once(&consumer, out, topics[turn % topics.len()]).await;
        turn += 1;
    }
    // one more, on queues now empty: "no message" (not an error, not a duplicate) once the poll is over
    let began = Instant::now();
    receive_once(&consumer, out, topics[turn % topics.len()]).await;
    out.empty_wait = began.elapsed().as_secs_f64();
    consumer.shutdown().await.map_err(|e| format!("{e:?}"))
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() != 8 {
        eprintln!("usage: scenario ENDPOINT PLAIN_TOPIC FIFO_TOPIC CONSUMER_GROUP COUNT GROUPS PER_GROUP SECONDS");
        std::process::exit(2);
    }
    let (endpoint, plain, fifo, group) = (&args[0], &args[1], &args[2], &args[3]);
    let count: usize = args[4].parse().expect("COUNT");
    let groups: Vec<&str> = args[5].split(',').collect();
    let per_group: usize = args[6].parse().expect("PER_GROUP");
    let seconds: f64 = args[7].parse().expect("SECONDS");
    let mut out = Report::default();
    if let Err(e) = produce(endpoint, &mut out, plain, fifo, count, &groups, per_group).await {
        out.errors.push(format!("producer: {e}"));
    }
    let want = out.plain.len() + out.fifo.len();
    if let Err(e) = consume(endpoint, &mut out, group, &[plain, fifo], want, seconds).await {
        out.errors.push(format!("consumer: {e}"));
    }
    println!("{}", out.json());
    std::process::exit(0);
}
