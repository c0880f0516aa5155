// The official RocketMQ 5.x Go client (github.com/apache/rocketmq-clients/golang/v5) against a gRPC
// endpoint: COUNT plain sends, FIFO sends of several message groups interleaved, then a SimpleConsumer
// that receives (and acks) all of them, then receives once more from the empty queues.
//
//	scenario ENDPOINT PLAIN_TOPIC FIFO_TOPIC CONSUMER_GROUP COUNT GROUPS PER_GROUP SECONDS
//
// GROUPS is a comma-separated list of message groups; message i of group g has the body "g#i".
// Prints one JSON document as the last stdout line (see tests/conformance/polyglot5.py).
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	rmq "github.com/apache/rocketmq-clients/golang/v5"
	"github.com/apache/rocketmq-clients/golang/v5/credentials"
	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"
)

type sent struct {
	MessageID string `json:"messageId"`
	Body      string `json:"body"`
	Group     string `json:"group,omitempty"`
	Offset    int64  `json:"offset"`
}

type received struct {
	MessageID string `json:"messageId"`
	Topic     string `json:"topic"`
	Body      string `json:"body"`
	Group     string `json:"group"`
	Attempt   int32  `json:"attempt"`
}

type report struct {
	Client   string     `json:"client"`
	Plain    []sent     `json:"plain"`
	Fifo     []sent     `json:"fifo"`
	Received []received `json:"received"`
	Errors   []string   `json:"errors"`
	// EmptyWait is how long (seconds) the last receive, on empty queues, took to say "no message"
	EmptyWait float64 `json:"emptyWait"`
}

func send(producer rmq.Producer, topic, body, group string) (sent, error) {
	msg := &rmq.Message{Topic: topic, Body: []byte(body)}
	msg.SetTag("TagA")
	if group != "" {
		msg.SetMessageGroup(group)
	}
	receipts, err := producer.Send(context.Background(), msg)
	if err != nil {
		return sent{}, err
	}
	if len(receipts) != 1 {
		return sent{}, fmt.Errorf("%d receipts for one message", len(receipts))
	}
	return sent{MessageID: receipts[0].MessageID, Body: body, Group: group, Offset: receipts[0].Offset}, nil
}

func produce(cfg *rmq.Config, out *report, plain, fifo string, count int, groups []string, perGroup int) error {
	producer, err := rmq.NewProducer(cfg, rmq.WithTopics(plain, fifo))
	if err != nil {
		return err
	}
	if err = producer.Start(); err != nil {
		return err
	}
	defer producer.GracefulStop()
	for i := 0; i < count; i++ {
		if s, err := send(producer, plain, fmt.Sprintf("p-%d", i), ""); err != nil {
			out.Errors = append(out.Errors, fmt.Sprintf("plain %d: %v", i, err))
		} else {
			out.Plain = append(out.Plain, s)
		}
	}
	for i := 0; i < perGroup; i++ {
		for _, g := range groups {
			if s, err := send(producer, fifo, fmt.Sprintf("%s#%d", g, i), g); err != nil {
				out.Errors = append(out.Errors, fmt.Sprintf("fifo %s#%d: %v", g, i, err))
			} else {
				out.Fifo = append(out.Fifo, s)
			}
		}
	}
	return nil
}

func receiveOnce(consumer rmq.SimpleConsumer, out *report) {
	views, err := consumer.Receive(context.Background(), 16, 20*time.Second)
	if err != nil {
		if status, ok := rmq.AsErrRpcStatus(err); !ok || status.GetCode() != int32(v2.Code_MESSAGE_NOT_FOUND) {
			out.Errors = append(out.Errors, fmt.Sprintf("receive: %v", err))
			time.Sleep(200 * time.Millisecond)
		}
		return
	}
	for _, v := range views {
		group := ""
		if g := v.GetMessageGroup(); g != nil {
			group = *g
		}
		out.Received = append(out.Received, received{MessageID: v.GetMessageId(), Topic: v.GetTopic(),
			Body: string(v.GetBody()), Group: group, Attempt: v.GetDeliveryAttempt()})
		if err := consumer.Ack(context.Background(), v); err != nil {
			out.Errors = append(out.Errors, fmt.Sprintf("ack %s: %v", v.GetMessageId(), err))
		}
	}
}

func consume(cfg *rmq.Config, out *report, topics []string, want int, seconds float64) error {
	subs := map[string]*rmq.FilterExpression{}
	for _, t := range topics {
		subs[t] = rmq.SUB_ALL
	}
	// the receive asks no polling time: the endpoint (as Apache's proxy) waits until the call's deadline,
	// awaitDuration + the request timeout, less half the request timeout: 1 s + 3 s - 1.5 s here
	consumer, err := rmq.NewSimpleConsumer(cfg, rmq.WithSimpleAwaitDuration(time.Second),
		rmq.WithSimpleSubscriptionExpressions(subs))
	if err != nil {
		return err
	}
	if err = consumer.Start(); err != nil {
		return err
	}
	defer consumer.GracefulStop()
	deadline := time.Now().Add(time.Duration(seconds * float64(time.Second)))
	for len(out.Received) < want && time.Now().Before(deadline) {
		receiveOnce(consumer, out)
	}
	// one more, on queues now empty: "no message" (not an error, not a duplicate) once the poll is over
	began := time.Now()
	receiveOnce(consumer, out)
	out.EmptyWait = time.Since(began).Seconds()
	return nil
}

func main() {
	if len(os.Args) != 9 {
		fmt.Fprintln(os.Stderr, "usage: scenario ENDPOINT PLAIN_TOPIC FIFO_TOPIC CONSUMER_GROUP COUNT GROUPS PER_GROUP SECONDS")
		os.Exit(2)
	}
	endpoint, plain, fifo, consumerGroup := os.Args[1], os.Args[2], os.Args[3], os.Args[4]
	count, _ := strconv.Atoi(os.Args[5])
	groups := strings.Split(os.Args[6], ",")
	perGroup, _ := strconv.Atoi(os.Args[7])
	seconds, _ := strconv.ParseFloat(os.Args[8], 64)
	rmq.EnableSsl = false // the endpoint under test is plaintext (the client's default is TLS)
	out := &report{Client: "golang/v5", Plain: []sent{}, Fifo: []sent{}, Received: []received{}, Errors: []string{}}
	cfg := &rmq.Config{Endpoint: endpoint, ConsumerGroup: consumerGroup, Credentials: &credentials.SessionCredentials{}}
	if err := produce(cfg, out, plain, fifo, count, groups, perGroup); err != nil {
		out.Errors = append(out.Errors, fmt.Sprintf("producer: %v", err))
	}
	want := len(out.Plain) + len(out.Fifo)
	if err := consume(cfg, out, []string{plain, fifo}, want, seconds); err != nil {
		out.Errors = append(out.Errors, fmt.Sprintf("consumer: %v", err))
	}
	doc, _ := json.Marshal(out)
	fmt.Println(string(doc))
}
