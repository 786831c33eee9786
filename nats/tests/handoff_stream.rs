//! The handoffs stream of the JetStream log, against a real nats-server
//! (`scripts/install-nats.sh` installs it; without it these tests fail, they
//! never skip): handoff packages the broker publishes reach plain
//! subscribers and stay in `MNEME_<swarm>_HANDOFFS`, once per handoff id,
//! for a recipient that reads them later with a durable consumer.

use std::time::Duration;

use async_nats::jetstream::consumer::{self, AckPolicy, DeliverPolicy};
use futures::StreamExt;
use mneme_events::EventId;
use mneme_nats::server::NatsServer;
use mneme_nats::{Broker, JetStreamLog, JetStreamOptions, subjects};

const SWARM: &str = "demo";

/// How long a message that is on the server may take to arrive.
const DELIVERY_TIMEOUT: Duration = Duration::from_secs(10);

fn handoff_id(n: u8) -> EventId {
    format!("01KF00000000000000000000{n:02}").parse().expect("a ULID")
}

fn package(n: u8) -> Vec<u8> {
    format!(r#"{{"handoff_id":"{}"}}"#, handoff_id(n)).into_bytes()
}

/// Up to `max` messages the consumer has for us now, each acknowledged.
async fn fetch_and_ack(consumer: &consumer::PullConsumer, max: usize) -> Vec<async_nats::jetstream::Message> {
    let mut batch = consumer
        .fetch()
        .max_messages(max)
        .expires(Duration::from_millis(500))
        .messages()
        .await
        .expect("a pull request");
    let mut messages = Vec::new();
    while let Some(message) = batch.next().await {
        let message = message.expect("a message");
        message.ack().await.expect("ack");
        messages.push(message);
    }
    messages
}

fn message_id(message: &async_nats::jetstream::Message) -> String {
    let headers = message.headers.as_ref().expect("headers");
    headers.get("Nats-Msg-Id").expect("a Nats-Msg-Id").as_str().to_string()
}

/// A recipient that was not listening when its handoffs were published gets
/// each of them once through a durable consumer, and after acknowledging
/// them only the new ones; a plain subscriber gets every publish, a
/// repeated one too (the router publishes pending handoffs again after a
/// restart).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_durable_consumer_gets_each_handoff_once_and_plain_subscribers_every_publish() {
    let server = NatsServer::require().await;
    let log = JetStreamLog::connect(&server.url(), SWARM, JetStreamOptions::default()).await.expect("open");
    let client = async_nats::connect(server.url()).await.expect("connect");
    let reviewer_subject = subjects::handoff_subject(SWARM, "reviewer");
    let mut live = client.subscribe(reviewer_subject.clone()).await.expect("subscribe");
    // A request on the subscriber's connection: once it is answered the
    // server has the subscription (a flush only writes it out).
    let jetstream = async_nats::jetstream::new(client);
    let stream = jetstream.get_stream(subjects::handoffs_stream(SWARM)).await.expect("the handoffs stream");

    log.publish_handoff("reviewer", handoff_id(1), package(1)).await.expect("publish");
    log.publish_handoff("coder", handoff_id(2), package(2)).await.expect("publish");
    log.publish_handoff("reviewer", handoff_id(1), package(1)).await.expect("publish again");
    for _ in 0..2 {
        let message = tokio::time::timeout(DELIVERY_TIMEOUT, live.next()).await.expect("a live message in time");
        assert_eq!(message.expect("a message").payload.as_ref(), package(1).as_slice());
    }

    // The reviewer comes up now, after the fact.
    let consumer: consumer::PullConsumer = stream
        .get_or_create_consumer(
            "reviewer-handoffs",
            consumer::pull::Config {
                durable_name: Some("reviewer-handoffs".to_string()),
                filter_subject: reviewer_subject,
                deliver_policy: DeliverPolicy::All,
                ack_policy: AckPolicy::Explicit,
                ..Default::default()
            },
        )
        .await
        .expect("a durable consumer");
    let first = fetch_and_ack(&consumer, 10).await;
    assert_eq!(first.len(), 1, "the handoff published twice is stored once, the coder's is not the reviewer's");
    assert_eq!(first[0].payload.as_ref(), package(1).as_slice());
    assert_eq!(message_id(&first[0]), handoff_id(1).to_string());

    log.publish_handoff("reviewer", handoff_id(3), package(3)).await.expect("publish");
    let next = fetch_and_ack(&consumer, 10).await;
    assert_eq!(next.iter().map(message_id).collect::<Vec<_>>(), [handoff_id(3).to_string()]);
    assert!(fetch_and_ack(&consumer, 10).await.is_empty(), "nothing acknowledged comes again");
}

/// The handoffs stream remembers ids for days by default, so that a restart
/// days later stores no copy; with an age limit the window is cut to it,
/// which the server requires (it refuses a window longer than the age).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_handoffs_duplicate_window_is_long_and_within_the_age_limit() {
    let server = NatsServer::require().await;
    let client = async_nats::connect(server.url()).await.expect("connect");
    let jetstream = async_nats::jetstream::new(client.clone());

    let _log = JetStreamLog::from_client(client.clone(), SWARM, JetStreamOptions::default()).await.expect("open");
    let mut stream = jetstream.get_stream(subjects::handoffs_stream(SWARM)).await.expect("the handoffs stream");
    let config = stream.info().await.expect("info").config.clone();
    assert!(config.duplicate_window >= Duration::from_secs(24 * 60 * 60), "{:?}", config.duplicate_window);
    assert_eq!(config.subjects, [subjects::swarm_handoffs_filter(SWARM)]);

    let max_age = Duration::from_secs(600);
    let options = JetStreamOptions { max_age: Some(max_age), ..JetStreamOptions::default() };
    let _aged = JetStreamLog::from_client(client, "aged", options).await.expect("a log with an age limit opens");
    let mut stream = jetstream.get_stream(subjects::handoffs_stream("aged")).await.expect("the handoffs stream");
    let config = stream.info().await.expect("info").config.clone();
    assert_eq!((config.duplicate_window, config.max_age), (max_age, max_age));
}
