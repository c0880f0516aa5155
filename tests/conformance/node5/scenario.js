// The official RocketMQ 5.x Node.js client (npm rocketmq-client-nodejs) against a gRPC endpoint: COUNT
// plain sends, FIFO sends of several message groups interleaved, then a SimpleConsumer that receives
// (and acks) all of them, then receives once more from the empty queues.
//
//   node scenario.js ENDPOINT PLAIN_TOPIC FIFO_TOPIC CONSUMER_GROUP COUNT GROUPS PER_GROUP SECONDS
//
// GROUPS is a comma-separated list of message groups; message i of group g has the body "g#i".
// Prints one JSON document as the last stdout line (see tests/conformance/polyglot5.py). The client
// comes from NODE_PATH (tests/conformance/nodeclient5.py installs it into the cache).
'use strict';

const { Producer, SimpleConsumer } = require('rocketmq-client-nodejs');

const quiet = { info() {}, warn() {}, debug() {}, error(...args) { console.error(...args); } };

async function send(producer, topic, body, group) {
  const receipt = await producer.send({ topic, body: Buffer.from(body), tag: 'TagA', messageGroup: group });
  // the queue the client addressed; the endpoint picks the queue it stores in (as Apache's proxy does)
  return { messageId: receipt.messageId, body, group, offset: Number(receipt.offset),
    clientQueue: receipt.messageQueue.queueId };
}

async function produce(endpoint, out, plain, fifo, count, groups, perGroup) {
  const producer = new Producer({ endpoints: endpoint, topics: [ plain, fifo ], logger: quiet });
  await producer.startup();
  try {
    for (let i = 0; i < count; i++) {
      try {
        out.plain.push(await send(producer, plain, `p-${i}`, undefined));
      } catch (err) {
        out.errors.push(`plain ${i}: ${err}`);
      }
    }
    for (let i = 0; i < perGroup; i++) {
      for (const g of groups) {
        try {
          out.fifo.push(await send(producer, fifo, `${g}#${i}`, g));
        } catch (err) {
          out.errors.push(`fifo ${g}#${i}: ${err}`);
        }
      }
    }
  } finally {
    await producer.shutdown();
  }
}

async function receiveOnce(consumer, out) {
  let views;
  try {
    views = await consumer.receive(16, 20000);
  } catch (err) {
    out.errors.push(`receive: ${err}`);
    await new Promise(resolve => setTimeout(resolve, 200));
    return;
  }
  for (const v of views) {
    out.received.push({ messageId: v.messageId, topic: v.topic, body: v.body.toString(),
      group: v.messageGroup || '', attempt: v.deliveryAttempt });
    try {
      await consumer.ack(v);
    } catch (err) {
      out.errors.push(`ack ${v.messageId}: ${err}`);
    }
  }
}

async function consume(endpoint, out, group, topics, want, seconds) {
  const subscriptions = new Map(topics.map(t => [ t, '*' ]));
  const consumer = new SimpleConsumer({ endpoints: endpoint, consumerGroup: group, subscriptions,
    awaitDuration: 3000, logger: quiet });
  await consumer.startup();
  const deadline = Date.now() + seconds * 1000;
  try {
    while (out.received.length < want && Date.now() < deadline) {
      await receiveOnce(consumer, out);
    }
    // one more, on queues now empty: "no message" (not an error, not a duplicate) once the poll is over
    const began = Date.now();
    await receiveOnce(consumer, out);
    out.emptyWait = (Date.now() - began) / 1000;
  } finally {
    await consumer.shutdown();
  }
}

async function main(argv) {
  if (argv.length !== 8) {
    console.error('usage: scenario.js ENDPOINT PLAIN_TOPIC FIFO_TOPIC CONSUMER_GROUP COUNT GROUPS PER_GROUP SECONDS');
    process.exit(2);
  }
  const [ endpoint, plain, fifo, group, count, groups, perGroup, seconds ] = argv;
  const out = { client: 'rocketmq-client-nodejs', plain: [], fifo: [], received: [], errors: [] };
  try {
    await produce(endpoint, out, plain, fifo, Number(count), groups.split(','), Number(perGroup));
  } catch (err) {
    out.errors.push(`producer: ${err}`);
  }
  try {
    await consume(endpoint, out, group, [ plain, fifo ], out.plain.length + out.fifo.length, Number(seconds));
  } catch (err) {
    out.errors.push(`consumer: ${err}`);
  }
  console.log(JSON.stringify(out));
  process.exit(0); // the client's timers must not keep the process alive
}

main(process.argv.slice(2));
