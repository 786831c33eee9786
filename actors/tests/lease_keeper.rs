//! The lease keeper over a real (embedded) log: one holder at a time, the
//! others see who holds it; a keeper that stops gives the lease up, and
//! another takes it within a third of the time to live; the gate tells
//! the actors both ways.

use std::sync::Arc;
use std::time::Duration;

use futures::stream::BoxStream;
use mneme_actors::{LeaseKeeper, WRITER_LEASE};
use mneme_events::{ErasureRecord, Event};
use mneme_nats::{Appended, DeadLetter, EventLog, Lease, LogEntry, LogError, Seq, SledLog, SledOptions};

const TTL: Duration = Duration::from_millis(300);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_keeper_holds_the_lease_and_another_takes_it_when_it_stops() {
    let dir = tempfile::tempdir().unwrap();
    let log: Arc<dyn EventLog> = Arc::new(SledLog::open(dir.path(), "demo", SledOptions::default()).unwrap());
    let first = log.take_lease(WRITER_LEASE, "node-a").await.unwrap();
    assert!(first.is_some(), "a free lease is taken at start");
    let (keeper_a, mut gate_a) = LeaseKeeper::start(log.clone(), WRITER_LEASE, "node-a", TTL, first);
    let (keeper_b, mut gate_b) = LeaseKeeper::start(log.clone(), WRITER_LEASE, "node-b", TTL, None);
    let held_by_a = gate_a.until_held().await.expect("node-a holds it");
    assert_eq!(held_by_a.holder, "node-a");

    // node-b keeps trying, sees who holds it, and never holds it meanwhile.
    tokio::time::sleep(TTL * 3).await;
    let seen_by_b = gate_b.state();
    assert_eq!(seen_by_b.held, None);
    assert_eq!(seen_by_b.holder.as_deref(), Some("node-a"));
    assert!(gate_b.require("demo").is_err());
    let refusal = gate_b.require("demo").unwrap_err().to_string();
    assert!(refusal.contains("held by node-a"), "{refusal}");

    // node-a stops: it gives the lease up, its gate says so, node-b takes
    // it and appends as holder; node-a's lease is fenced out.
    keeper_a.stop().await;
    tokio::time::timeout(Duration::from_secs(1), gate_a.until_lost(&held_by_a)).await.expect("node-a's gate sees it");
    let held_by_b = tokio::time::timeout(TTL * 2, gate_b.until_held()).await.expect("taken within 2/3 of a TTL");
    let held_by_b = held_by_b.expect("node-b holds it");
    assert!(held_by_b.epoch > held_by_a.epoch);
    let event = mneme_events::Event::new(
        "demo",
        "coder",
        mneme_events::EventKind::MessageRecorded(mneme_events::MessageRecorded {
            role: "assistant".to_string(),
            text: "written by the new holder".to_string(),
        }),
    );
    log.append_fenced(&held_by_b, std::slice::from_ref(&event)).await.unwrap();
    assert!(matches!(log.append_fenced(&held_by_a, std::slice::from_ref(&event)).await, Err(LogError::Fenced { .. })));
    keeper_b.stop().await;
    assert_eq!(log.lease_holder(WRITER_LEASE).await.unwrap(), None, "the last keeper gave it up");
}

/// A log whose lease renewals hang, once `hang` is set, as a request to a
/// broker node that went away does until the client times out.
struct HangingRenewals {
    log: SledLog,
    hang: std::sync::atomic::AtomicBool,
}

#[async_trait::async_trait]
impl EventLog for HangingRenewals {
    fn swarm(&self) -> &str {
        self.log.swarm()
    }
    fn max_event_bytes(&self) -> usize {
        self.log.max_event_bytes()
    }
    async fn append(&self, events: &[Event]) -> Result<Vec<Appended>, LogError> {
        self.log.append(events).await
    }
    async fn append_raw(&self, agent: &str, raw: &[u8]) -> Result<Seq, LogError> {
        self.log.append_raw(agent, raw).await
    }
    async fn read(&self, from: Seq, agent: Option<&str>, max: usize) -> Result<Vec<LogEntry>, LogError> {
        self.log.read(from, agent, max).await
    }
    async fn subscribe(
        &self,
        from: Seq,
        agent: Option<&str>,
    ) -> Result<BoxStream<'static, Result<LogEntry, LogError>>, LogError> {
        self.log.subscribe(from, agent).await
    }
    async fn last_seq(&self) -> Result<Seq, LogError> {
        self.log.last_seq().await
    }
    async fn agents(&self) -> Result<Vec<String>, LogError> {
        self.log.agents().await
    }
    async fn load_position(&self, consumer: &str) -> Result<Option<Seq>, LogError> {
        self.log.load_position(consumer).await
    }
    async fn take_lease(&self, role: &str, holder: &str) -> Result<Option<Lease>, LogError> {
        self.log.take_lease(role, holder).await
    }
    async fn renew_lease(&self, lease: &mut Lease) -> Result<(), LogError> {
        if self.hang.load(std::sync::atomic::Ordering::SeqCst) {
            std::future::pending::<()>().await;
        }
        self.log.renew_lease(lease).await
    }
    async fn append_fenced(&self, lease: &Lease, events: &[Event]) -> Result<Vec<Appended>, LogError> {
        self.log.append_fenced(lease, events).await
    }
    async fn release_lease(&self, lease: &Lease) -> Result<(), LogError> {
        self.log.release_lease(lease).await
    }
    async fn lease_holder(&self, role: &str) -> Result<Option<String>, LogError> {
        self.log.lease_holder(role).await
    }
    async fn store_position(&self, consumer: &str, seq: Seq) -> Result<(), LogError> {
        self.log.store_position(consumer, seq).await
    }
    async fn dead_letter(&self, letter: DeadLetter) -> Result<(), LogError> {
        self.log.dead_letter(letter).await
    }
    async fn dead_letters(&self) -> Result<Vec<DeadLetter>, LogError> {
        self.log.dead_letters().await
    }
    async fn record_erasure(&self, record: &ErasureRecord) -> Result<(), LogError> {
        self.log.record_erasure(record).await
    }
    async fn erasures(&self) -> Result<Vec<ErasureRecord>, LogError> {
        self.log.erasures().await
    }
    async fn erase(&self, seqs: &[Seq]) -> Result<usize, LogError> {
        self.log.erase(seqs).await
    }
    async fn replace(&self, replacements: &[(Seq, Event)]) -> Result<usize, LogError> {
        self.log.replace(replacements).await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_whose_renewal_hangs_stops_holding_within_a_time_to_live() {
    let dir = tempfile::tempdir().unwrap();
    let log = Arc::new(HangingRenewals {
        log: SledLog::open(dir.path(), "demo", SledOptions::default()).unwrap(),
        hang: std::sync::atomic::AtomicBool::new(false),
    });
    let first = log.take_lease(WRITER_LEASE, "node-a").await.unwrap();
    let (keeper, mut gate) = LeaseKeeper::start(log.clone(), WRITER_LEASE, "node-a", TTL, first);
    let held = gate.until_held().await.expect("node-a holds it");
    // Renewed a few times while the log answers.
    tokio::time::sleep(TTL * 2).await;
    assert!(gate.held().is_some(), "renewed while the log answers");

    // From here every renewal hangs: within a time to live of the last
    // answered one, the gate says this lease is no longer held here.
    log.hang.store(true, std::sync::atomic::Ordering::SeqCst);
    let hung_at = std::time::Instant::now();
    // (The bound is generous for a loaded machine: without the keeper's
    // own deadline, the gate would say "held" for ever.)
    tokio::time::timeout(TTL * 10, gate.until_lost(&held))
        .await
        .expect("the keeper gives up a lease whose renewal hangs past its time to live");
    eprintln!("given up {:?} after renewals began to hang (time to live {TTL:?})", hung_at.elapsed());
    keeper.stop().await;
}
