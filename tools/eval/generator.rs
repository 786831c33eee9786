//! The seeded generator of synthetic multi-agent SWE trajectories with
//! ground truth (see `eval_dataset.rs`): the same seed and size give the
//! same events and the same truth, byte for byte.
//!
//! The swarm works through its tasks one after another. Each task is a bug
//! in a synthetic repository (Rust under `src/<module>/`, Python under
//! `services/<module>/`, JavaScript under `web/src/<module>/`): the planner
//! files the issue and hands it to a lead coder, who investigates (reads the
//! file, runs the failing test, explains the cause, asserts facts), then
//! implements (a decision later reversed, edits, sometimes a compile error,
//! the fix, the passing run, a setting that changes), hands over to the
//! tester (the whole suite, sometimes a fact that conflicts with the lead's)
//! and to the reviewer (the diff, sometimes a decision that conflicts, a
//! pinned rule). Filler (file reads, searches, passing runs, chatter,
//! private notes) scales the haystack around the story. Names are combined
//! from word lists and drawn without repetition per task, so thousands of
//! tasks stay distinguishable.
//!
//! Ground truth is written while the story is told, from what each event
//! says, never from what a retriever is expected to find; every answer is a
//! shared event, so any agent may ask.

use std::collections::HashSet;

use mneme_events::{EventId, Timestamp};
use serde_json::{Map, Value, json};

use crate::eval::dataset::{Dataset, EVAL_SWARM, GeneratorSize, GroundTruth, PhaseTruth, Question, QuestionKind};

/// 2026-03-02T08:00:00Z, the time of the swarm's first event.
const START_UNIX_MS: u64 = 1_772_438_400_000;
const MILLIS_PER_DAY: u64 = 86_400_000;
/// The synthetic repository's Rust crate.
const CRATE_NAME: &str = "orbit";
const CRATE_VERSION: &str = "0.14.2";

// ------------------------------------------------------------ randomness

/// SplitMix64: small, fast, and the same on every platform and Rust
/// release, which neither std's hashers nor an outside crate promise.
struct SeededRandom {
    state: u64,
}

impl SeededRandom {
    fn new(seed: u64) -> SeededRandom {
        SeededRandom { state: seed ^ 0x6d6e_656d_655f_6576 }
    }

    fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut mixed = self.state;
        mixed = (mixed ^ (mixed >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        mixed = (mixed ^ (mixed >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        mixed ^ (mixed >> 31)
    }

    /// A number in `0..bound`; the modulo bias is negligible for the small
    /// bounds used here.
    fn below(&mut self, bound: usize) -> usize {
        (self.next_u64() % bound as u64) as usize
    }

    /// A number in `low..=high`.
    fn between(&mut self, low: u64, high: u64) -> u64 {
        low + self.next_u64() % (high - low + 1)
    }

    fn chance(&mut self, probability: f64) -> bool {
        ((self.next_u64() >> 11) as f64 / (1u64 << 53) as f64) < probability
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    /// `count` distinct indices below `bound` (`count` <= `bound`).
    fn distinct<const N: usize>(&mut self, bound: usize) -> [usize; N] {
        let mut chosen = [0; N];
        for position in 0..N {
            chosen[position] = loop {
                let candidate = self.below(bound);
                if !chosen[..position].contains(&candidate) {
                    break candidate;
                }
            };
        }
        chosen
    }

    fn hex(&mut self, digits: usize) -> String {
        let text = format!("{:016x}", self.next_u64());
        text[..digits.min(16)].to_string()
    }
}

// ------------------------------------------------------------ vocabulary

#[rustfmt::skip]
const MODULES: &[&str] = &[
    "ledger", "billing", "invoice", "payout", "refund", "session", "token", "quota", "ingest", "export", "search",
    "shard", "webhook", "catalog", "inventory", "shipment", "tenant", "audit", "scheduler", "report", "metrics",
    "alerting", "notify", "upload", "thumbnail", "render", "indexer", "replica", "snapshot", "journal", "compaction",
    "checkout", "cart", "pricing", "coupon", "tax", "currency", "fraud", "identity", "consent", "profile", "avatar",
    "feed", "timeline", "comment", "moderation", "chat", "presence", "routing", "geocode", "tracking", "dispatch",
    "fleet", "warehouse", "picking", "returns", "subscription", "entitlement", "license", "usage", "meter", "rating",
    "settlement", "treasury", "forex", "wallet", "transfer", "statement", "dunning", "collections", "onboarding",
    "signup", "password", "mfa", "oauth", "gateway", "proxy", "ratelimit", "cache", "outbox", "inbox", "dedup",
    "archive", "retention", "backup", "restore", "migration", "flags", "experiment", "telemetry", "tracing", "health",
    "pager", "sitemap", "locale", "captcha",
];

#[rustfmt::skip]
const FILE_STEMS: &[&str] = &[
    "apply", "reconcile", "store", "client", "codec", "retry", "limits", "batch", "worker", "handler", "router",
    "settings", "schema", "migrate", "validate", "merge", "lock", "pool", "window", "encoder", "decoder", "parser",
    "executor", "registry", "resolver", "mapper", "builder", "loader", "writer", "reader", "sink", "source", "filter",
    "policy", "budget", "timer", "cleanup", "compactor", "checkpoint", "index", "totals", "balance", "replay",
    "stream", "fanout", "sweeper", "convert", "state",
];

#[rustfmt::skip]
const COMPONENT_ROLES: &[&str] = &[
    "reconciler", "worker", "gateway", "scheduler", "exporter", "indexer", "poller", "relay", "api", "consumer",
    "producer", "sweeper", "importer", "aggregator", "notifier", "daemon", "syncer", "dispatcher", "collector",
    "publisher", "watcher", "migrator", "cron", "frontend",
];

#[rustfmt::skip]
const ERROR_CONCEPTS: &[&str] = &[
    "Overflow", "Underflow", "Timeout", "Conflict", "Checksum", "Stale", "Duplicate", "Missing", "Corrupt",
    "Exhausted", "Mismatch", "Poisoned", "Deadline", "Quota", "Precision", "Ordering", "Encoding", "Lease", "Version",
    "Capacity", "Range", "Signature", "Expiry", "Drift", "Rollover", "Truncation", "Replay", "Backpressure",
    "Handshake", "Serialization", "Contention", "Cursor", "Partition", "Rounding", "Permission", "Idempotency",
    "Cardinality", "Window", "Skew", "Fencing",
];

#[rustfmt::skip]
const SYMBOL_VERBS: &[&str] = &[
    "apply", "compute", "load", "store", "merge", "flush", "reconcile", "resolve", "validate", "encode", "decode",
    "parse", "schedule", "dispatch", "refresh", "rotate", "compact", "rebuild", "replay", "settle", "allocate",
    "release", "acquire", "emit", "collect", "prune", "expire", "normalize", "render", "track",
];

/// Single words: task symbols are `verb_module_noun`, filler symbols
/// `verb_noun`, so the two never coincide.
#[rustfmt::skip]
const SYMBOL_NOUNS: &[&str] = &[
    "entry", "batch", "balance", "cursor", "window", "record", "frame", "chunk", "lease", "offset", "total", "header",
    "payload", "event", "bucket", "page", "row", "segment", "manifest", "span", "slot", "digest", "ticket", "receipt",
    "voucher", "watermark", "epoch", "delta", "grant", "credit", "debit", "hold", "marker", "cohort", "tier", "limit",
    "sample", "job", "task", "claim",
];

const FIELDS: &[&str] =
    &["balance", "total", "counter", "watermark", "offset", "usage", "backlog", "quota_used", "in_flight", "sequence"];

#[rustfmt::skip]
const TEST_VERBS: &[&str] = &[
    "rejects", "keeps", "handles", "preserves", "survives", "detects", "retries", "orders", "rounds", "dedupes",
    "caps", "reports",
];

#[rustfmt::skip]
const TEST_CONDITIONS: &[&str] = &[
    "on_overflow", "after_restart", "under_contention", "across_midnight", "with_large_amounts", "on_stale_cursor",
    "on_duplicate_delivery", "after_timeout", "with_empty_batch", "at_capacity", "on_clock_skew", "during_failover",
    "with_unicode_names", "on_partial_failure", "after_rollover", "with_foreign_currency",
];

/// Disjoint from [`TEST_CONDITIONS`], so filler tests never carry a task's name.
const FILLER_TEST_SUFFIXES: &[&str] =
    &["round_trips", "is_idempotent", "uses_defaults", "works", "rejects_empty", "sorts_stably", "parses_minimal"];

/// What users see, said twice: (as the issue says it, as a question says
/// it). The two sides share no content word, so a paraphrase question is
/// answerable only by meaning.
const SYMPTOM_SUBJECTS: &[(&str, &str)] = &[
    ("customer invoices", "bills sent to clients"),
    ("account balances", "funds that users hold"),
    ("refund requests", "reimbursement claims"),
    ("login sessions", "signed-in visitors"),
    ("scheduled reports", "periodic summaries"),
    ("uploaded images", "pictures people attach"),
    ("search results", "query hits"),
    ("order confirmations", "purchase receipts"),
    ("webhook deliveries", "callbacks to partner systems"),
    ("shipping labels", "parcel stickers"),
    ("stock counts", "warehouse quantities"),
    ("discount codes", "promo vouchers"),
    ("password reset emails", "messages for recovering a forgotten credential"),
    ("subscription renewals", "automatic plan extensions"),
    ("audit log entries", "compliance trail records"),
    ("push notifications", "mobile alerts"),
    ("currency conversions", "exchange-rate calculations"),
    ("CSV exports", "spreadsheet downloads"),
    ("dashboard charts", "graphs on the overview page"),
    ("payout transfers", "money sent to sellers"),
    ("tax amounts", "levies on each sale"),
    ("user avatars", "profile pictures"),
    ("chat messages", "conversation posts"),
    ("delivery estimates", "expected arrival dates"),
    ("API keys", "access credentials for integrations"),
    ("trial accounts", "free evaluation signups"),
    ("usage meters", "consumption counters"),
    ("team invitations", "requests to join a workspace"),
    ("calendar bookings", "appointment reservations"),
    ("backup snapshots", "nightly copies of the database"),
];

const SYMPTOM_FAILURES: &[(&str, &str)] = &[
    ("are counted twice", "show up duplicated"),
    ("disappear after a restart", "get lost whenever the service reboots"),
    ("arrive hours late", "turn up long after they should"),
    ("show the wrong total", "display an incorrect sum"),
    ("time out", "hang until the deadline passes"),
    ("are rejected as invalid", "get refused as malformed"),
    ("expire too early", "become unusable prematurely"),
    ("go to the wrong customer", "reach an unrelated person"),
    ("lose their last digit", "get truncated by a character"),
    ("are stuck in pending", "never leave the waiting state"),
    ("come out in random order", "appear shuffled"),
    ("use yesterday's data", "rely on stale information"),
    ("fail silently", "break with no error message"),
    ("are processed twice", "get handled a second time"),
    ("become corrupted", "end up garbled"),
    ("show another tenant's data", "leak records from a different organisation"),
    ("slow the page to a crawl", "make the screen sluggish"),
    ("are rounded incorrectly", "lose cents in the arithmetic"),
    ("are missing fields", "come back incomplete"),
    ("skip every other item", "drop alternating elements"),
];

const SYMPTOM_TRIGGERS: &[(&str, &str)] = &[
    ("when two requests arrive at the same time", "under concurrent calls"),
    ("after midnight UTC", "as the day rolls over"),
    ("for amounts above one million", "with very large values"),
    ("when the network drops", "if connectivity is lost"),
    ("during a deploy", "while a release is rolling out"),
    ("for accounts in a non-default currency", "with foreign-money profiles"),
    ("on the last day of the month", "at period end"),
    ("when the cache is cold", "right after memoized values get flushed"),
    ("for users with very long names", "if someone's display label is lengthy"),
    ("under heavy load", "when traffic spikes"),
    ("after a failover to the replica", "when the secondary database takes over"),
    ("when the batch is empty", "if there is nothing to process"),
    ("in the Safari browser", "on Apple's web client"),
    ("after daylight saving time changes", "when clocks shift by an hour"),
    ("on retries after a timeout", "when a call is attempted again after it lapsed"),
    ("for tenants created before 2024", "with organisations from the early days"),
];

const ISSUE_CONTEXT: &[&str] = &[
    "Three customers wrote in about it this week.",
    "It started after the last release.",
    "Support has a manual workaround, but it does not scale.",
    "Finance flagged it during the monthly close.",
    "The on-call engineer saw it in the production logs.",
    "A partner escalated it through their account manager.",
];

/// Why the function fails, continuing "`symbol` in `path` ...".
const MECHANISMS: &[&str] = &[
    "adds the amounts without an overflow check",
    "reads the cursor before the write is committed",
    "compares local timestamps with UTC ones",
    "reuses a pooled connection after the server closed it",
    "drops the idempotency key when it retries",
    "trusts a cached total that nobody invalidates",
    "sorts by insertion time instead of sequence number",
    "truncates the value to 32 bits",
    "ignores the lease expiry",
    "rounds each line item before summing",
    "decodes the header with the wrong charset",
    "releases the lock before the flush finishes",
    "retries the whole batch instead of the failed rows",
    "keeps a stale schema version in a static",
];

/// When it fails; `{n}` is the task's number.
const CONDITIONS: &[&str] = &[
    "once the batch holds more than {n} entries",
    "after {n} consecutive retries",
    "when more than {n} workers run at once",
    "for payloads above {n} KiB",
    "when the queue is deeper than {n} messages",
];

/// A single-valued setting that the fix changes: (predicate, how a
/// question names it, values).
const SETTINGS: &[(&str, &str, &[u32])] = &[
    ("timeout_seconds", "timeout in seconds", &[15, 30, 45, 60, 90, 120, 300]),
    ("batch_size", "batch size", &[50, 100, 250, 500, 1000, 2000]),
    ("max_connections", "connection pool size", &[16, 32, 64, 128, 256]),
    ("poll_interval_ms", "polling interval in milliseconds", &[250, 500, 1000, 2000, 5000]),
    ("cache_ttl_seconds", "cache lifetime in seconds", &[30, 60, 300, 600, 3600]),
    ("page_size", "page size", &[20, 50, 100, 200, 500]),
    ("retry_limit", "retry limit", &[3, 5, 8, 10, 12]),
    ("queue_capacity", "queue capacity", &[1000, 5000, 10000, 50000]),
    ("worker_threads", "number of worker threads", &[4, 8, 16, 32]),
];

/// Single-valued predicates (none is in the built-in multi-valued list of
/// `projections/src/consolidation/policy.rs`) whose two objects conflict.
const CONFLICTS: &[(&str, &[&str])] = &[
    ("stores_data_in", &["postgres", "mysql", "redis", "sqlite", "dynamodb", "cassandra"]),
    ("deployed_in_region", &["eu-west-1", "us-east-1", "us-west-2", "ap-southeast-2", "eu-central-1"]),
    ("serialization_format", &["json", "protobuf", "msgpack", "avro", "cbor"]),
    ("owned_by_team", &["payments", "platform", "growth", "core-infra", "billing-ops", "risk"]),
    ("hosted_on", &["kubernetes", "nomad", "ecs", "bare-metal", "lambda"]),
];

/// A way to fix the bug: the decision's choice and rationale, and the line
/// that implements it per language. `{error}`, `{field}` and `{limit}` are
/// filled in per task.
struct Strategy {
    /// A word of the choice that a summary of the decision should keep.
    keyword: &'static str,
    choice: &'static str,
    rationale: &'static str,
    rust: &'static str,
    python: &'static str,
    javascript: &'static str,
}

const STRATEGIES: &[Strategy] = &[
    Strategy {
        keyword: "checked_add",
        choice: "use checked_add and return {error} to the caller instead of wrapping",
        rationale: "callers can handle a typed error, while a wrapped {field} corrupts data silently",
        rust: "let total = current.checked_add(delta).ok_or({error}::new(delta, {limit}))?;",
        python: "total = checked_add(current, delta, limit={limit})  # raises {error}",
        javascript: "const total = checkedAdd(current, delta, {limit}); // throws {error}",
    },
    Strategy {
        keyword: "saturating_add",
        choice: "clamp the {field} with saturating_add at {limit} and log a warning",
        rationale: "a clamped value keeps the pipeline moving and the warning makes the clamp visible",
        rust: "let total = current.saturating_add(delta).min({limit});",
        python: "total = min(current + delta, {limit})  # saturating_add semantics",
        javascript: "const total = Math.min(current + delta, {limit}); // saturating_add",
    },
    Strategy {
        keyword: "backoff",
        choice: "retry the write with exponential backoff, five attempts at most, then surface {error}",
        rationale: "the failure is transient under contention and a bounded retry absorbs it",
        rust: "let total = with_backoff(5, || self.try_add(current, delta)).await?;",
        python: "total = with_backoff(5, lambda: self._try_add(current, delta))",
        javascript: "const total = await withBackoff(5, () => this.tryAdd(current, delta));",
    },
    Strategy {
        keyword: "idempotency_key",
        choice: "store an idempotency_key with every write and skip repeated deliveries",
        rationale: "the duplicate comes from redelivery, so remembering what was applied removes it at the source",
        rust: "let total = if self.seen.insert(entry.idempotency_key) { current + delta } else { current };",
        python: "total = current + delta if self.seen.add_new(entry[\"idempotency_key\"]) else current",
        javascript: "const total = this.seen.addNew(entry.idempotencyKey) ? current + delta : current;",
    },
    Strategy {
        keyword: "advisory_lock",
        choice: "take a Postgres advisory_lock per {field} before writing",
        rationale: "writers race on the same row, and a lock serialises them without a schema change",
        rust: "let _guard = self.db.advisory_lock(entry.account_id).await?; let total = current + delta;",
        python: "with self.db.advisory_lock(entry[\"account_id\"]): total = current + delta",
        javascript: "const total = await db.advisoryLock(entry.accountId, () => current + delta);",
    },
    Strategy {
        keyword: "compare_and_swap",
        choice: "compare_and_swap on a version column and retry on conflict",
        rationale: "optimistic concurrency keeps reads lock-free and conflicts are rare",
        rust: "let total = self.store.compare_and_swap(entry.version, current, current + delta)?;",
        python: "total = self.store.compare_and_swap(entry[\"version\"], current, current + delta)",
        javascript: "const total = store.compareAndSwap(entry.version, current, current + delta);",
    },
    Strategy {
        keyword: "utc",
        choice: "normalise every timestamp to utc at the boundary and convert only for display",
        rationale: "mixing offsets inside the service is what shifts the day",
        rust: "let total = current + delta.at_offset(UtcOffset::UTC).amount();",
        python: "total = current + normalise_utc(delta)",
        javascript: "const total = current + toUtc(delta).amount;",
    },
    Strategy {
        keyword: "schema",
        choice: "validate the payload against the schema before enqueueing it",
        rationale: "rejecting bad input at the edge keeps it out of the {field} entirely",
        rust: "let total = current + schema::validated(delta).map_err({error}::invalid)?;",
        python: "total = current + schema.validated(delta)  # raises {error}",
        javascript: "const total = current + schema.validated(delta); // throws {error}",
    },
    Strategy {
        keyword: "429",
        choice: "bound the queue at {limit} and shed load with HTTP 429 when it is full",
        rationale: "unbounded buffering is what turns a spike into an outage",
        rust: "let total = self.admit(current + delta, {limit}).ok_or({error}::shed(429))?;",
        python: "total = self.admit(current + delta, {limit})  # sheds with 429",
        javascript: "const total = this.admit(current + delta, {limit}); // sheds with 429",
    },
    Strategy {
        keyword: "streaming",
        choice: "switch to streaming the rows instead of buffering the whole result",
        rationale: "memory grows with the result today, and streaming keeps it flat",
        rust: "let total = rows.try_fold(current, |sum, row| async move { Ok(sum + row.amount) }).await?;",
        python: "total = sum((row.amount for row in rows.stream()), start=current)",
        javascript: "const total = await rows.stream().reduce((sum, row) => sum + row.amount, current);",
    },
    Strategy {
        keyword: "invalidate",
        choice: "invalidate the cached {field} on every write instead of waiting for the TTL",
        rationale: "readers saw the old value for a whole TTL after each write",
        rust: "let total = current + delta; self.cache.invalidate(&entry.key);",
        python: "total = current + delta; self.cache.invalidate(entry[\"key\"])",
        javascript: "const total = current + delta; this.cache.invalidate(entry.key);",
    },
    Strategy {
        keyword: "feature_flag",
        choice: "ship the new path behind a feature_flag that is off by default",
        rationale: "the change touches every write, so it should be possible to turn it off without a deploy",
        rust: "let total = if self.flags.feature_flag(\"strict-{field}\") { self.strict_add(current, delta)? } else { current + delta };",
        python: "total = self._strict_add(current, delta) if self.flags.feature_flag(\"strict-{field}\") else current + delta",
        javascript: "const total = flags.featureFlag('strict-{field}') ? this.strictAdd(current, delta) : current + delta;",
    },
];

/// Compile-time errors after the first edit: (code, how a question names it).
const RUST_BUILD_ERRORS: &[(&str, &str)] = &[
    ("E0308", "mismatched types"),
    ("E0599", "no method found"),
    ("E0425", "cannot find value"),
    ("E0382", "borrow of moved value"),
];
const PYTHON_BUILD_ERRORS: &[(&str, &str)] = &[
    ("arg-type", "incompatible argument type"),
    ("assignment", "incompatible assignment"),
    ("union-attr", "optional attribute"),
];

const HANDOFF_CONSTRAINTS: &[&str] = &[
    "no schema migrations in this change",
    "keep the public API backwards compatible",
    "every fix lands with a regression test",
    "do not log customer identifiers",
    "stay within the current memory budget of the service",
];

const CONVENTIONS: &[(&str, &str)] = &[
    ("rust.errors", "thiserror enums per module; no unwrap() outside tests"),
    ("rust.format", "cargo fmt with max_width = 120; clippy -D warnings must pass"),
    ("python.style", "ruff and black, line length 110, type hints on public functions"),
    ("tests.regressions", "every bug fix lands with a regression test that failed before the fix"),
    ("commits", "conventional commits, one logical change per commit, reference the issue"),
    ("logging.secrets", "never log tokens or customer identifiers, not even truncated"),
    ("review.size", "keep pull requests under 400 changed lines"),
];

const PINNED_RULES: &[&str] = &[
    "never deploy {component} without running {test} first",
    "never lower the {setting} of {component} without a load test",
    "changes to {component} need a second reviewer from the owning team",
    "{component} must keep {test} as a required check in CI",
];

const CODE_COMMENTS: &[&str] = &[
    "keep in sync with the schema",
    "hot path: avoid allocations here",
    "see the runbook before changing this",
    "callers rely on the sort order",
    "the lock is held by the caller",
    "values are in minor units",
];

const COMMIT_TYPES: &[&str] = &["fix", "feat", "refactor", "chore", "test", "docs", "perf"];

// ------------------------------------------------------------ the repository

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Language {
    Rust,
    Python,
    JavaScript,
}

impl Language {
    fn source_path(self, module: &str, stem: &str) -> String {
        match self {
            Language::Rust => format!("src/{module}/{stem}.rs"),
            Language::Python => format!("services/{module}/{stem}.py"),
            Language::JavaScript => format!("web/src/{module}/{stem}.js"),
        }
    }

    /// Rust keeps unit tests in the source file.
    fn test_path(self, module: &str, stem: &str) -> String {
        match self {
            Language::Rust => self.source_path(module, stem),
            Language::Python => format!("tests/{module}/test_{stem}.py"),
            Language::JavaScript => format!("web/test/{module}/{stem}.test.js"),
        }
    }

    /// A function name from snake_case words, in the language's style.
    fn function_name(self, snake: &str) -> String {
        match self {
            Language::JavaScript => camel_case(snake, false),
            Language::Rust | Language::Python => snake.to_string(),
        }
    }

    fn test_function(self, snake: &str) -> String {
        match self {
            Language::Python => format!("test_{snake}"),
            Language::Rust | Language::JavaScript => snake.to_string(),
        }
    }

    fn build_errors(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Language::Rust => RUST_BUILD_ERRORS,
            Language::Python => PYTHON_BUILD_ERRORS,
            Language::JavaScript => &[],
        }
    }
}

fn camel_case(snake: &str, capitalise_first: bool) -> String {
    let mut camel = String::with_capacity(snake.len());
    for (index, part) in snake.split('_').enumerate() {
        let mut characters = part.chars();
        if let Some(first) = characters.next() {
            if index == 0 && !capitalise_first {
                camel.push(first);
            } else {
                camel.extend(first.to_uppercase());
            }
            camel.push_str(characters.as_str());
        }
    }
    camel
}

fn capitalise(text: &str) -> String {
    let mut characters = text.chars();
    match characters.next() {
        Some(first) => first.to_uppercase().chain(characters).collect(),
        None => String::new(),
    }
}

/// Everything one task is about, drawn before any event is written.
struct TaskWorld {
    task_id: String,
    issue_number: u64,
    language: Language,
    module: &'static str,
    stem: String,
    path: String,
    test_path: String,
    /// The service the facts are about, `ledger-reconciler`.
    component: String,
    symbol: String,
    /// The noun of the symbol, for its doc comment.
    noun: &'static str,
    field: &'static str,
    test_name: String,
    error_name: String,
    failing_line: u32,
    failing_column: u32,
    /// Indices into the symptom tables: subject, failure, trigger.
    symptom: [usize; 3],
    mechanism: usize,
    condition: usize,
    condition_number: u64,
    setting: usize,
    old_value: u32,
    new_value: u32,
    conflict: usize,
    conflict_objects: [usize; 2],
    port: u64,
    /// The first decision's strategy, the one that reverses it, the reviewer's.
    strategies: [usize; 3],
    build_error: Option<usize>,
    limit: u64,
    attempted: u64,
}

impl TaskWorld {
    fn fill(&self, template: &str) -> String {
        template
            .replace("{error}", &self.error_name)
            .replace("{field}", self.field)
            .replace("{limit}", &self.limit.to_string())
    }

    fn strategy(&self, which: usize) -> &'static Strategy {
        &STRATEGIES[self.strategies[which]]
    }

    fn strategy_code(&self, which: usize) -> String {
        let strategy = self.strategy(which);
        let template = match self.language {
            Language::Rust => strategy.rust,
            Language::Python => strategy.python,
            Language::JavaScript => strategy.javascript,
        };
        self.fill(template)
    }

    fn condition_text(&self) -> String {
        CONDITIONS[self.condition].replace("{n}", &self.condition_number.to_string())
    }

    /// The symptom as the issue states it, or as a question asks about it.
    fn symptom_text(&self, as_question: bool) -> String {
        let side = |pair: &(&'static str, &'static str)| if as_question { pair.1 } else { pair.0 };
        let [subject, failure, trigger] = self.symptom;
        format!(
            "{} {} {}",
            side(&SYMPTOM_SUBJECTS[subject]),
            side(&SYMPTOM_FAILURES[failure]),
            side(&SYMPTOM_TRIGGERS[trigger])
        )
    }

    fn decision_title(&self) -> String {
        format!("How {} deals with {}", self.symbol, self.error_name)
    }

    fn rust_test_path(&self) -> String {
        format!("{}::{}::tests::{}", self.module, self.stem, self.test_name)
    }

    /// The test as its runner names it in a listing of results.
    fn test_id(&self) -> String {
        match self.language {
            Language::Rust => self.rust_test_path(),
            Language::Python => format!("{}::{}", self.test_path, self.test_name),
            Language::JavaScript => self.test_name.clone(),
        }
    }

    fn test_command(&self) -> String {
        match self.language {
            Language::Rust => format!("RUST_BACKTRACE=1 cargo test -p {CRATE_NAME} {}", self.rust_test_path()),
            Language::Python => format!("pytest {}::{} --tb=native", self.test_path, self.test_name),
            Language::JavaScript => format!("node --test {}", self.test_path),
        }
    }
}

/// Draws names until `make` gives one not taken. From the 64th try on,
/// `make` gets a round number to append, so that any count of tasks ends.
fn draw_unique(
    random: &mut SeededRandom,
    taken: &mut HashSet<String>,
    kind: &str,
    mut make: impl FnMut(&mut SeededRandom, Option<usize>) -> String,
) -> String {
    let mut attempt = 0usize;
    loop {
        let round = (attempt >= 64).then_some(attempt / 64 + 1);
        let name = make(random, round);
        if taken.insert(format!("{kind}:{name}")) {
            return name;
        }
        attempt += 1;
    }
}

fn with_round(name: String, round: Option<usize>, separator: &str) -> String {
    match round {
        Some(round) => format!("{name}{separator}{round}"),
        None => name,
    }
}

fn plan_task(random: &mut SeededRandom, index: usize, taken: &mut HashSet<String>) -> TaskWorld {
    let language = match random.below(10) {
        0..=5 => Language::Rust,
        6..=8 => Language::Python,
        _ => Language::JavaScript,
    };
    let (mut module, mut stem) = (MODULES[0], String::new());
    let path = draw_unique(random, taken, "path", |random, round| {
        module = *random.pick(MODULES);
        stem = with_round(random.pick(FILE_STEMS).to_string(), round, "_");
        language.source_path(module, &stem)
    });
    let component = draw_unique(random, taken, "component", |random, round| {
        let role = loop {
            let role = *random.pick(COMPONENT_ROLES);
            if role != module {
                break role;
            }
        };
        with_round(format!("{module}-{role}"), round, "-")
    });
    let error_name = draw_unique(random, taken, "error", |random, round| {
        let concept = with_round(random.pick(ERROR_CONCEPTS).to_string(), round, "");
        format!("{}{concept}Error", camel_case(module, true))
    });
    let mut noun = SYMBOL_NOUNS[0];
    let symbol = draw_unique(random, taken, "symbol", |random, round| {
        noun = *random.pick(SYMBOL_NOUNS);
        with_round(format!("{}_{module}_{noun}", random.pick(SYMBOL_VERBS)), round, "_v")
    });
    let test_name = draw_unique(random, taken, "test", |random, round| {
        let name =
            format!("{}_{}_{}", random.pick(TEST_VERBS), random.pick(SYMBOL_NOUNS), random.pick(TEST_CONDITIONS));
        with_round(name, round, "_")
    });
    let mut symptom = [0; 3];
    draw_unique(random, taken, "symptom", |random, round| {
        symptom = [
            random.below(SYMPTOM_SUBJECTS.len()),
            random.below(SYMPTOM_FAILURES.len()),
            random.below(SYMPTOM_TRIGGERS.len()),
        ];
        // Past the tables' 9,600 combinations a symptom repeats (and its
        // paraphrase question becomes ambiguous); the round keeps the draw finite.
        with_round(format!("{symptom:?}"), round, "#")
    });
    let setting = random.below(SETTINGS.len());
    let [old_index, new_index] = random.distinct::<2>(SETTINGS[setting].2.len());
    let conflict = random.below(CONFLICTS.len());
    let build_errors = language.build_errors();
    let field = *random.pick(FIELDS);
    let limit = *random.pick(&[65_535, 100_000, 1_000_000, 4_294_967_295, 10_000_000]);
    TaskWorld {
        task_id: format!("task-{:04}", index + 1),
        issue_number: 1000 + index as u64 * 7 + random.between(0, 6),
        language,
        module,
        test_path: language.test_path(module, &stem),
        stem,
        path,
        component,
        symbol: language.function_name(&symbol),
        noun,
        field,
        test_name: language.test_function(&test_name),
        error_name,
        failing_line: random.between(40, 420) as u32,
        failing_column: random.between(9, 33) as u32,
        symptom,
        mechanism: random.below(MECHANISMS.len()),
        condition: random.below(CONDITIONS.len()),
        condition_number: random.between(12, 4096),
        setting,
        old_value: SETTINGS[setting].2[old_index],
        new_value: SETTINGS[setting].2[new_index],
        conflict,
        conflict_objects: random.distinct::<2>(CONFLICTS[conflict].1.len()),
        port: random.between(8000, 9899),
        strategies: random.distinct::<3>(STRATEGIES.len()),
        build_error: (!build_errors.is_empty() && random.chance(0.5)).then(|| random.below(build_errors.len())),
        limit,
        attempted: limit + random.between(1, 5000),
    }
}

/// Agent names: a planner, a coder, a reviewer and a tester first (the
/// fewest that give every role), then more coders and helpers.
fn agent_names(count: usize) -> Vec<String> {
    const NAMED: [&str; 8] = ["planner", "coder-1", "reviewer", "tester", "coder-2", "coder-3", "ops", "researcher"];
    (0..count)
        .map(|index| match NAMED.get(index) {
            Some(name) => name.to_string(),
            None => format!("coder-{}", index - NAMED.len() + 4),
        })
        .collect()
}

/// The role a message is recorded with: `coder-2` speaks as `coder`.
fn message_role(agent: &str) -> &str {
    match agent {
        "planner" => "orchestrator",
        other => other.trim_end_matches(|character: char| character.is_ascii_digit()).trim_end_matches('-'),
    }
}

// ------------------------------------------------------------ the code the agents see

/// The task's function as the investigation reads it: numbered lines, the
/// buggy line the edits replace, and the line a type fix touches.
struct CodeShape {
    first_line: u32,
    lines: Vec<String>,
    buggy_line: u32,
    indent: &'static str,
    buggy_code: String,
    type_fix: Option<(u32, String, String)>,
}

impl CodeShape {
    fn of(world: &TaskWorld) -> CodeShape {
        let (symbol, error, field, limit, noun) =
            (&world.symbol, &world.error_name, world.field, world.limit, world.noun);
        let line = world.failing_line;
        match world.language {
            Language::Rust => CodeShape {
                first_line: line - 5,
                lines: vec![
                    format!("    /// Adds one {noun} to the running {field}."),
                    format!("    pub fn {symbol}(&mut self, entry: &Entry) -> Result<u64, {error}> {{"),
                    format!("        let current = self.{field};"),
                    "        let delta = entry.amount;".to_string(),
                    format!("        tracing::debug!(current, delta, \"{symbol}\");"),
                    format!("        let total = checked(current + delta, {limit}).unwrap();"),
                    format!("        self.{field} = total;"),
                    "        Ok(total)".to_string(),
                    "    }".to_string(),
                ],
                buggy_line: line,
                indent: "        ",
                buggy_code: format!("let total = checked(current + delta, {limit}).unwrap();"),
                type_fix: Some((
                    line - 2,
                    "let delta = entry.amount;".to_string(),
                    "let delta = u64::from(entry.amount);".to_string(),
                )),
            },
            Language::Python => CodeShape {
                first_line: line - 5,
                lines: vec![
                    format!("    def {symbol}(self, entry):"),
                    format!("        \"\"\"Add one {noun} to the running {field}.\"\"\""),
                    format!("        current, delta = self.{field}, entry[\"amount\"]"),
                    "        total = current + delta".to_string(),
                    format!("        if total > {limit}:"),
                    format!("            raise {error}(f\"{field} {{total}} exceeds {limit}\")"),
                    format!("        self.{field} = total"),
                    "        return total".to_string(),
                ],
                buggy_line: line - 2,
                indent: "        ",
                buggy_code: "total = current + delta".to_string(),
                type_fix: Some((
                    line - 3,
                    format!("current, delta = self.{field}, entry[\"amount\"]"),
                    format!("current, delta = int(self.{field}), int(entry[\"amount\"])"),
                )),
            },
            Language::JavaScript => CodeShape {
                first_line: line - 5,
                lines: vec![
                    format!("  /** Adds one {noun} to the running {field}. */"),
                    format!("  {symbol}(entry) {{"),
                    format!("    const current = this.{field}, delta = entry.amount;"),
                    "    const total = current + delta;".to_string(),
                    format!("    if (total > {limit}) {{"),
                    format!("      throw new {error}(`{field} ${{total}} exceeds {limit}`);"),
                    "    }".to_string(),
                    format!("    this.{field} = total;"),
                    "    return total;".to_string(),
                ],
                buggy_line: line - 2,
                indent: "    ",
                buggy_code: "const total = current + delta;".to_string(),
                type_fix: None,
            },
        }
    }

    fn last_line(&self) -> u32 {
        self.first_line + self.lines.len() as u32 - 1
    }

    /// The listing with line numbers, as `read_file` shows it.
    fn numbered(&self) -> String {
        numbered_lines(self.first_line, &self.lines)
    }

    /// The lines around the buggy line after it was replaced by `code`, as
    /// an edit tool echoes them (the function's header is not among them).
    fn snippet_with(&self, code: &str) -> String {
        let index = (self.buggy_line - self.first_line) as usize;
        let mut lines = self.lines[index - 1..=index + 1].to_vec();
        lines[1] = format!("{}{code}", self.indent);
        numbered_lines(self.buggy_line - 1, &lines)
    }
}

fn numbered_lines(first_line: u32, lines: &[String]) -> String {
    let mut text = String::new();
    for (offset, line) in lines.iter().enumerate() {
        if offset > 0 {
            text.push('\n');
        }
        text.push_str(&format!("{:>5}  {line}", first_line + offset as u32));
    }
    text
}

const RUSTC_LIBRARY_HASH: &str = "90b35a6239c3d8bdabc530a6a0816f7ff89a0aaf";

/// The task's test run before the fix: a real-looking failure with the
/// error name, the path and the line where it is raised. Templates are
/// written as the runners print them, flush left.
fn failing_test_output(world: &TaskWorld, random: &mut SeededRandom) -> (String, i32) {
    let (path, line, column) = (&world.path, world.failing_line, world.failing_column);
    let (error, field, limit, attempted) = (&world.error_name, world.field, world.limit, world.attempted);
    let (test_path, test_name, symbol, module) = (&world.test_path, &world.test_name, &world.symbol, world.module);
    let test_line = line + random.between(60, 240) as u32;
    match world.language {
        Language::Rust => {
            let (test, stem, rustc) = (world.rust_test_path(), &world.stem, RUSTC_LIBRARY_HASH);
            let (seconds, hash, filtered) =
                (random.between(300, 4000) as f64 / 100.0, random.hex(16), random.between(20, 300));
            let output = format!(
                r#"   Compiling {CRATE_NAME} v{CRATE_VERSION} (/repo)
    Finished `test` profile [unoptimized + debuginfo] target(s) in {seconds:.2}s
     Running unittests src/lib.rs (target/debug/deps/{CRATE_NAME}-{hash})

running 1 test
test {test} ... FAILED

failures:

---- {test} stdout ----

thread '{test}' panicked at {path}:{line}:{column}:
called `Result::unwrap()` on an `Err` value: {error} {{ {field}: {attempted}, limit: {limit} }}
stack backtrace:
   0: rust_begin_unwind
             at /rustc/{rustc}/library/std/src/panicking.rs:665:5
   1: core::panicking::panic_fmt
             at /rustc/{rustc}/library/core/src/panicking.rs:76:14
   2: core::result::unwrap_failed
             at /rustc/{rustc}/library/core/src/result.rs:1700:5
   3: {CRATE_NAME}::{module}::{stem}::{symbol}
             at ./{path}:{line}:{column}
   4: {CRATE_NAME}::{test}
             at ./{path}:{test_line}:9
note: Some details are omitted, run with `RUST_BACKTRACE=full` for a verbose backtrace.


failures:
    {test}

test result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; {filtered} filtered out; finished in 0.02s

error: test failed, to rerun pass `--lib`"#
            );
            (output, 101)
        }
        Language::Python => {
            let qualified = format!("{module}.{}.{error}", world.stem);
            let output = format!(
                r#"============================= test session starts ==============================
platform linux -- Python 3.12.3, pytest-8.3.4, pluggy-1.5.0
rootdir: /repo
configfile: pyproject.toml
collected 1 item

{test_path} F                                                  [100%]

=================================== FAILURES ===================================
_________________________ {test_name} _________________________
Traceback (most recent call last):
  File "/repo/{test_path}", line {test_line}, in {test_name}
    {module}.{symbol}(entry)
  File "/repo/{path}", line {line}, in {symbol}
    raise {error}(f"{field} {{total}} exceeds {limit}")
{qualified}: {field} {attempted} exceeds {limit}
=========================== short test summary info ============================
FAILED {test_path}::{test_name} - {qualified}: {field} {attempted} exceeds {limit}
============================== 1 failed in 0.{}s ==============================="#,
                random.between(11, 99),
            );
            (output, 1)
        }
        Language::JavaScript => {
            let class = camel_case(module, true);
            let output = format!(
                r#"✖ {test_name} ({}.{}ms)
  {error}: {field} {attempted} exceeds {limit}
      at {class}.{symbol} (file:///repo/{path}:{line}:{column})
      at TestContext.<anonymous> (file:///repo/{test_path}:{test_line}:14)
      at Test.runInAsyncScope (node:async_hooks:214:14)
      at Test.run (node:internal/test_runner/test:1047:25)
      at async Test.processPendingSubtests (node:internal/test_runner/test:744:7)
ℹ tests 1
ℹ suites 0
ℹ pass 0
ℹ fail 1
ℹ cancelled 0
ℹ skipped 0
ℹ todo 0
ℹ duration_ms {}.{}"#,
                random.between(1, 9),
                random.between(10, 99),
                random.between(30, 90),
                random.between(1, 9),
            );
            (output, 1)
        }
    }
}

/// A passing run of tests, each line naming one test.
fn passing_tests_output(language: Language, tests: &[String], random: &mut SeededRandom) -> String {
    let count = tests.len();
    match language {
        Language::Rust => {
            let lines: Vec<String> = tests.iter().map(|test| format!("test {test} ... ok")).collect();
            let (seconds, hash, filtered) =
                (random.between(200, 3000) as f64 / 100.0, random.hex(16), random.between(0, 400));
            format!(
                r#"   Compiling {CRATE_NAME} v{CRATE_VERSION} (/repo)
    Finished `test` profile [unoptimized + debuginfo] target(s) in {seconds:.2}s
     Running unittests src/lib.rs (target/debug/deps/{CRATE_NAME}-{hash})

running {count} tests
{}

test result: ok. {count} passed; 0 failed; 0 ignored; 0 measured; {filtered} filtered out; finished in 0.{:02}s"#,
                lines.join("\n"),
                random.between(1, 99),
            )
        }
        Language::Python => {
            let percent = |index: usize| (index + 1) * 100 / count.max(1);
            let lines: Vec<String> = tests
                .iter()
                .enumerate()
                .map(|(index, test)| format!("{test} PASSED [{:>3}%]", percent(index)))
                .collect();
            format!(
                r#"============================= test session starts ==============================
platform linux -- Python 3.12.3, pytest-8.3.4, pluggy-1.5.0
rootdir: /repo
collected {count} items

{}

============================== {count} passed in {}.{:02}s ==============================="#,
                lines.join("\n"),
                random.between(0, 9),
                random.between(1, 99),
            )
        }
        Language::JavaScript => {
            let lines: Vec<String> = tests
                .iter()
                .map(|test| format!("✔ {test} ({}.{}ms)", random.between(0, 9), random.between(1, 99)))
                .collect();
            format!(
                r#"{}
ℹ tests {count}
ℹ suites 0
ℹ pass {count}
ℹ fail 0
ℹ cancelled 0
ℹ skipped 0
ℹ todo 0
ℹ duration_ms {}.{}"#,
                lines.join("\n"),
                random.between(40, 900),
                random.between(1, 9),
            )
        }
    }
}

/// The compile or type-check failure after the first edit, at the edited line.
fn build_failure_output(world: &TaskWorld, code: &str, line: u32, first_edit: &str) -> String {
    let (path, field, column) = (&world.path, world.field, world.failing_column);
    let (message, label) = match code {
        "E0308" => ("mismatched types".to_string(), "expected `u64`, found `u32`"),
        "E0599" => (
            format!("no method named `as_{field}` found for type `u32` in the current scope"),
            "method not found in `u32`",
        ),
        "E0425" => ("cannot find value `delta` in this scope".to_string(), "not found in this scope"),
        "E0382" => ("borrow of moved value: `entry`".to_string(), "value borrowed here after move"),
        mypy_code => {
            let message = match mypy_code {
                "arg-type" => {
                    format!(r#"Argument 1 to "{}" has incompatible type "str"; expected "int""#, world.symbol)
                }
                "assignment" => {
                    r#"Incompatible types in assignment (expression has type "float", variable has type "int")"#
                        .to_string()
                }
                _ => format!(r#"Item "None" of "Optional[Entry]" has no attribute "{field}""#),
            };
            let checked = 10 + line % 40;
            return format!(
                "{path}:{line}: error: {message}  [{mypy_code}]\nFound 1 error in 1 file (checked {checked} source files)"
            );
        }
    };
    let gutter = " ".repeat(line.to_string().len());
    format!(
        r#"   Compiling {CRATE_NAME} v{CRATE_VERSION} (/repo)
error[{code}]: {message}
{gutter}--> {path}:{line}:{column}
{gutter} |
{line} |         {first_edit}
{gutter} |                     ^^^^^ {label}

For more information about this error, try `rustc --explain {code}`.
error: could not compile `{CRATE_NAME}` (lib) due to 1 previous error"#
    )
}

/// The cause as the lead explains it; variants restate the same cause with
/// the same path, identifiers and numbers in other words and order.
fn root_cause_text(variant: usize, world: &TaskWorld) -> String {
    let (symbol, path, error) = (&world.symbol, &world.path, &world.error_name);
    let (mechanism, condition, line) = (MECHANISMS[world.mechanism], world.condition_text(), world.failing_line);
    match variant {
        0 => format!("Found it: {symbol} in {path} {mechanism} {condition}, so {error} is raised at line {line}."),
        1 => format!("{error} is raised at line {line} because {symbol} in {path} {mechanism} {condition}."),
        2 => format!(
            "To restate the cause: {condition}, {symbol} in {path} {mechanism}, which raises {error} at line {line}."
        ),
        _ => {
            format!("Same cause as before: {symbol} ({path}) {mechanism} {condition}; {error} comes from line {line}.")
        }
    }
}

/// Two messages of the lead that read alike but differ in one thing that
/// matters: a number, a path, a negation or an identifier.
fn near_miss_texts(world: &TaskWorld, kind: usize, random: &mut SeededRandom) -> (String, String) {
    let (test, component) = (&world.test_name, &world.component);
    match kind {
        0 => {
            let writers = random.between(3, 12);
            let other = writers * 10;
            let text =
                |count: u64| format!("Reproduced {test} locally with {count} concurrent writers and a cold cache.");
            (text(writers), text(other))
        }
        1 => {
            let other_path = world.language.test_path(world.module, &format!("{}_regression", world.stem));
            let text = |path: &str| format!("The regression test {test} belongs in {path} next to the other cases.");
            (text(&world.test_path), text(&other_path))
        }
        2 => (
            format!("The change to {component} is covered by the nightly integration suite."),
            format!("The change to {component} is not covered by the nightly integration suite."),
        ),
        _ => {
            let [first, second] = random.distinct::<2>(SYMBOL_VERBS.len());
            let caller = |verb: usize| world.language.function_name(&format!("{}_{}", SYMBOL_VERBS[verb], world.noun));
            let text = |name: String| format!("{test} only exercises the path through {name} for now.");
            (text(caller(first)), text(caller(second)))
        }
    }
}

// ------------------------------------------------------------ recording events

/// Envelope fields beyond agent, kind and data.
#[derive(Default, Clone, Copy)]
struct Extra<'a> {
    causation_id: Option<&'a str>,
    importance: Option<f64>,
    private: bool,
}

impl<'a> Extra<'a> {
    fn caused_by(id: &'a str) -> Extra<'a> {
        Extra { causation_id: Some(id), ..Extra::default() }
    }

    fn important(importance: f64) -> Extra<'a> {
        Extra { importance: Some(importance), ..Extra::default() }
    }
}

/// An event written: its id and its time.
#[derive(Debug, Clone, Default)]
struct Emitted {
    id: String,
    unix_ms: u64,
}

/// A phase whose `phase_completed` is still to come.
struct PhaseUnderway {
    agent: String,
    phase_id: String,
    key_facts: Vec<String>,
}

/// Who does what in one task.
struct Cast {
    planner: String,
    lead: String,
    tester: String,
    reviewer: String,
}

/// Ids of the story's events that ground truth names.
#[derive(Default)]
struct StoryIds {
    issue: String,
    planner_handoff: String,
    read_file: String,
    failing_run: String,
    raised_in_fact: String,
    root_cause: Vec<String>,
    old_setting: Emitted,
    change_ms: u64,
    conflicting_facts: Vec<String>,
    port_facts: Vec<String>,
    near_miss: Vec<String>,
    /// The near miss's second text, said in the next phase.
    second_near_miss_text: String,
    /// A third wording of the cause, said in the next phase, if any.
    later_restatement: Option<usize>,
    first_decision: String,
    final_decision: String,
    reviewer_decision: Option<String>,
    build_fix_edit: Option<String>,
    fix_edit: String,
    diff: String,
}

/// One task being told: what it is about, who works on it, and the ids
/// its ground truth will name.
struct TaskRun<'w> {
    world: &'w TaskWorld,
    cast: Cast,
    ids: StoryIds,
    questions_asked: usize,
}

/// The whole swarm being written: one clock, one random stream, the events
/// so far and the truth gathered beside them.
struct Generator {
    random: SeededRandom,
    clock_ms: u64,
    agents: Vec<String>,
    filler_per_phase: usize,
    /// Files that tasks are about: filler never reads them, so that only
    /// the story says anything about a task's file.
    reserved_paths: HashSet<String>,
    correlation_id: Option<String>,
    phase: Option<PhaseUnderway>,
    events: Vec<Value>,
    truth: GroundTruth,
}

/// A swarm of `size`, the same for the same `seed`.
pub fn generate(seed: u64, size: GeneratorSize) -> Dataset {
    let agents = agent_names(size.agents.max(2));
    let mut random = SeededRandom::new(seed);
    let mut taken = HashSet::new();
    let worlds: Vec<TaskWorld> = (0..size.tasks).map(|index| plan_task(&mut random, index, &mut taken)).collect();
    let reserved_paths = worlds.iter().flat_map(|world| [world.path.clone(), world.test_path.clone()]).collect();
    let mut generator = Generator {
        random,
        clock_ms: START_UNIX_MS,
        agents: agents.clone(),
        filler_per_phase: size.filler_per_phase,
        reserved_paths,
        correlation_id: None,
        phase: None,
        events: Vec::with_capacity(size.tasks * (4 * size.filler_per_phase + 48) + 8),
        truth: GroundTruth::default(),
    };
    generator.set_conventions();
    for world in &worlds {
        generator.run_task(world);
    }
    generator.collect_never_forget();
    Dataset { seed, size, agents, events: generator.events, truth: generator.truth }
}

impl Generator {
    /// Writes one event in the wire format, 0.5 to 20 s after the previous
    /// one: times strictly increase, and ids (ULIDs of that millisecond and
    /// 80 seeded random bits) are unique and sort in publish order.
    fn emit(&mut self, agent: &str, kind: &str, data: Value, extra: Extra) -> Emitted {
        self.clock_ms += self.random.between(500, 20_000);
        let random_bits = (u128::from(self.random.next_u64()) << 64) | u128::from(self.random.next_u64());
        let id = EventId::from_parts(self.clock_ms, random_bits).to_string();
        let mut event = Map::new();
        event.insert("id".into(), Value::String(id.clone()));
        event.insert("swarm".into(), Value::String(EVAL_SWARM.into()));
        event.insert("agent".into(), Value::String(agent.into()));
        event.insert("ts".into(), Value::String(rfc3339(self.clock_ms)));
        event.insert("kind".into(), Value::String(kind.into()));
        event.insert("data".into(), data);
        if let Some(correlation_id) = &self.correlation_id {
            event.insert("correlation_id".into(), Value::String(correlation_id.clone()));
        }
        if let Some(causation_id) = extra.causation_id {
            event.insert("causation_id".into(), Value::String(causation_id.into()));
        }
        event.insert("scope".into(), Value::String(if extra.private { "private" } else { "shared" }.into()));
        if let Some(importance) = extra.importance {
            event.insert("importance".into(), json!(importance));
        }
        self.events.push(Value::Object(event));
        Emitted { id, unix_ms: self.clock_ms }
    }

    fn message(&mut self, agent: &str, text: String, extra: Extra) -> Emitted {
        let role = message_role(agent).to_string();
        self.emit(agent, "message_recorded", json!({"role": role, "text": text}), extra)
    }

    fn tool(&mut self, agent: &str, tool: &str, args: Value, output: String, exit_code: i32, extra: Extra) -> Emitted {
        let duration_ms = self.random.between(80, 30_000);
        let data =
            json!({"tool": tool, "args": args, "output": output, "exit_code": exit_code, "duration_ms": duration_ms});
        self.emit(agent, "tool_result_recorded", data, extra)
    }

    fn bash(&mut self, agent: &str, command: &str, output: String, exit_code: i32, extra: Extra) -> Emitted {
        self.tool(agent, "bash", json!({"cmd": command, "cwd": "/repo"}), output, exit_code, extra)
    }

    fn edit(&mut self, agent: &str, path: &str, old: String, new: String, snippet: String) -> Emitted {
        let output = format!(
            "The file {path} has been edited. Here is the result of running `cat -n` on a snippet of it:\n{snippet}"
        );
        let args = json!({"path": path, "old_string": old, "new_string": new});
        self.tool(agent, "edit_file", args, output, 0, Extra::default())
    }

    fn fact(&mut self, agent: &str, triple: [&str; 3], valid_from: Option<u64>, extra: Extra) -> Emitted {
        let [subject, predicate, object] = triple;
        let mut data = json!({"subject": subject, "predicate": predicate, "object": object, "confidence": 0.9});
        if let Some(valid_from) = valid_from {
            data["valid_from"] = Value::String(rfc3339(valid_from));
        }
        self.emit(agent, "fact_asserted", data, extra)
    }

    fn decision(&mut self, agent: &str, content: [String; 3], supersedes: Option<&str>, extra: Extra) -> Emitted {
        let [title, choice, rationale] = content;
        let mut data = json!({"title": title, "choice": choice, "rationale": rationale});
        if let Some(supersedes) = supersedes {
            data["supersedes"] = Value::String(supersedes.into());
        }
        self.emit(agent, "decision_made", data, extra)
    }

    fn handoff(&mut self, from: &str, to: &str, task: &str, fields: (String, Vec<String>, Vec<String>)) -> Emitted {
        let (summary, artifacts, decisions) = fields;
        let constraint = *self.random.pick(HANDOFF_CONSTRAINTS);
        let data = json!({"to": to, "task": task, "summary": summary, "artifacts": artifacts, "decisions": decisions, "constraints": [constraint]});
        self.emit(from, "handoff_sent", data, Extra::important(0.8))
    }

    fn pause_minutes(&mut self, low: u64, high: u64) {
        self.clock_ms += self.random.between(low, high) * 60_000;
    }

    // -------------------------------------------------------- phases

    /// Opens an explicit phase. Each agent has at most one open at a time,
    /// so every event it writes until `complete_phase` belongs to it.
    fn start_phase(&mut self, agent: &str, phase: &str, goal: String) {
        let started = self.emit(agent, "phase_started", json!({"phase": phase, "goal": goal}), Extra::important(0.6));
        self.phase = Some(PhaseUnderway { agent: agent.to_string(), phase_id: started.id, key_facts: Vec::new() });
    }

    /// Notes a short string that the phase owner's last event holds and a
    /// summary of the phase should keep.
    fn key_fact(&mut self, fact: &str) {
        if let Some(phase) = &mut self.phase {
            if !phase.key_facts.iter().any(|known| known.eq_ignore_ascii_case(fact)) {
                phase.key_facts.push(fact.to_string());
            }
        }
    }

    fn complete_phase(&mut self, phase: &str, outcome: String) {
        let underway = self.phase.take().expect("a phase is underway");
        let data = json!({"phase": phase, "phase_id": underway.phase_id, "outcome": outcome});
        self.emit(&underway.agent, "phase_completed", data, Extra::default());
        let mut key_facts = underway.key_facts;
        key_facts.truncate(5);
        self.truth.phases.push(PhaseTruth { agent: underway.agent, phase_id: underway.phase_id, key_facts });
    }

    /// How a phase's filler is spread over the gaps between its story beats.
    fn split_filler(&mut self, gaps: usize) -> Vec<usize> {
        let mut shares = vec![0; gaps];
        for _ in 0..self.filler_per_phase {
            shares[self.random.below(gaps)] += 1;
        }
        shares
    }

    // -------------------------------------------------------- the story

    /// The swarm's conventions, set once by the planner before any task.
    fn set_conventions(&mut self) {
        let planner = self.agents[0].clone();
        let chosen = self.random.distinct::<5>(CONVENTIONS.len());
        for index in chosen {
            let (key, value) = CONVENTIONS[index];
            self.emit(&planner, "preference_set", json!({"key": key, "value": value}), Extra::important(0.5));
        }
    }

    fn cast_for_task(&mut self) -> Cast {
        let planner = self.agents[0].clone();
        let coders: Vec<&String> = self.agents.iter().filter(|agent| agent.starts_with("coder")).collect();
        let lead = if coders.is_empty() { self.agents[1].clone() } else { (*self.random.pick(&coders)).clone() };
        let tester = self.agents.iter().find(|agent| *agent == "tester").unwrap_or(&lead).clone();
        let reviewer = match self.agents.iter().find(|agent| *agent == "reviewer" && **agent != lead) {
            Some(reviewer) => reviewer.clone(),
            None => self.agents.iter().find(|agent| **agent != lead).expect("at least two agents").clone(),
        };
        Cast { planner, lead, tester, reviewer }
    }

    fn run_task(&mut self, world: &TaskWorld) {
        let cast = self.cast_for_task();
        let mut run = TaskRun { world, cast, ids: StoryIds::default(), questions_asked: 0 };
        self.correlation_id = Some(world.task_id.clone());
        self.pause_minutes(2, 30);
        self.open_task(&mut run);
        self.investigate(&mut run);
        self.implement(&mut run);
        self.test_phase(&mut run);
        self.review(&mut run);
        self.record_story_truth(&run);
        self.ask_questions(&mut run);
    }

    fn open_task(&mut self, run: &mut TaskRun) {
        let (world, planner) = (run.world, run.cast.planner.clone());
        let symptom = capitalise(&world.symptom_text(false));
        let context = *self.random.pick(ISSUE_CONTEXT);
        let importance = if self.random.chance(0.3) { 0.9 } else { 0.7 };
        let text = format!("Issue #{} from support: {symptom}. {context}", world.issue_number);
        // The issue is what a user reported; the planner records it.
        let data = json!({"role": "user", "text": text});
        let issue = self.emit(&planner, "message_recorded", data, Extra::important(importance));
        let title = format!("Issue #{} in {}", world.issue_number, world.component);
        self.emit(
            &planner,
            "task_updated",
            json!({"task_id": world.task_id, "status": "open", "title": title}),
            Extra::default(),
        );
        let summary = format!("{symptom} (issue #{}). Find the cause; start from {}.", world.issue_number, world.path);
        let handoff =
            self.handoff(&planner, &run.cast.lead, &world.task_id, (summary, vec![world.path.clone()], vec![]));
        run.ids.issue = issue.id;
        run.ids.planner_handoff = handoff.id;
    }

    fn investigate(&mut self, run: &mut TaskRun) {
        let (world, lead) = (run.world, run.cast.lead.clone());
        let filler = self.split_filler(4);
        self.start_phase(&lead, "investigate", format!("Find the cause of issue #{}", world.issue_number));
        self.filler(run, &lead, filler[0]);
        let code = CodeShape::of(world);
        let args = json!({"path": world.path, "start_line": code.first_line, "end_line": code.last_line()});
        run.ids.read_file = self.tool(&lead, "read_file", args, code.numbered(), 0, Extra::default()).id;
        self.filler(run, &lead, filler[1]);
        let (output, exit_code) = failing_test_output(world, &mut self.random);
        let failing = self.bash(&lead, &world.test_command(), output, exit_code, Extra::default());
        self.key_fact(&world.error_name);
        self.key_fact(&world.path);
        self.key_fact(&world.test_name);
        let cause = self.message(&lead, root_cause_text(0, world), Extra::caused_by(&failing.id));
        run.ids.root_cause.push(cause.id);
        run.ids.failing_run = failing.id;
        self.assert_findings(run);
        self.filler(run, &lead, filler[2]);
        let near_miss_kind = self.random.below(4);
        let (first_near_miss, second_near_miss) = near_miss_texts(world, near_miss_kind, &mut self.random);
        run.ids.near_miss.push(self.message(&lead, first_near_miss, Extra::default()).id);
        let restatements = self.random.distinct::<2>(3);
        let restated = self.message(&lead, root_cause_text(1 + restatements[0], world), Extra::default());
        run.ids.root_cause.push(restated.id);
        self.filler(run, &lead, filler[3]);
        self.complete_phase("investigate", format!("cause found in {}", world.symbol));
        run.ids.second_near_miss_text = second_near_miss;
        run.ids.later_restatement = self.random.chance(0.4).then_some(1 + restatements[1]);
    }

    /// The lead's facts: where the error is raised, the setting the fix
    /// will change, one the tester may contradict, one it may repeat.
    fn assert_findings(&mut self, run: &mut TaskRun) {
        let (world, lead) = (run.world, run.cast.lead.clone());
        let raised_in = [world.error_name.as_str(), "raised_in", world.path.as_str()];
        run.ids.raised_in_fact = self.fact(&lead, raised_in, None, Extra::important(0.7)).id;
        // The setting held since some earlier release; the fix changes it.
        let (predicate, _, _) = SETTINGS[world.setting];
        let since = self.clock_ms - self.random.between(3, 90) * MILLIS_PER_DAY;
        let old_value = world.old_value.to_string();
        let setting = [world.component.as_str(), predicate, old_value.as_str()];
        run.ids.old_setting = self.fact(&lead, setting, Some(since), Extra::important(0.7));
        self.key_fact(predicate);
        let (conflict_predicate, objects) = CONFLICTS[world.conflict];
        let conflict = [world.component.as_str(), conflict_predicate, objects[world.conflict_objects[0]]];
        run.ids.conflicting_facts.push(self.fact(&lead, conflict, None, Extra::default()).id);
        let port = world.port.to_string();
        let port_fact = [world.component.as_str(), "listens_on_port", port.as_str()];
        run.ids.port_facts.push(self.fact(&lead, port_fact, None, Extra::default()).id);
    }

    fn implement(&mut self, run: &mut TaskRun) {
        let (world, lead) = (run.world, run.cast.lead.clone());
        let filler = self.split_filler(3);
        let code = CodeShape::of(world);
        self.pause_minutes(1, 10);
        self.start_phase(&lead, "implement", format!("Fix {} in {}", world.error_name, world.symbol));
        let in_progress = json!({"task_id": world.task_id, "status": "in_progress"});
        self.emit(&lead, "task_updated", in_progress, Extra::default());
        self.filler(run, &lead, filler[0]);
        let first = world.strategy(0);
        let content = [world.decision_title(), world.fill(first.choice), world.fill(first.rationale)];
        run.ids.first_decision = self.decision(&lead, content, None, Extra::important(0.8)).id;
        let first_code = world.strategy_code(0);
        let snippet = code.snippet_with(&first_code);
        self.edit(&lead, &world.path, code.buggy_code.clone(), first_code.clone(), snippet);
        self.build_error_and_fix(run, &code, &first_code);
        self.filler(run, &lead, filler[1]);
        let second_near_miss = std::mem::take(&mut run.ids.second_near_miss_text);
        run.ids.near_miss.push(self.message(&lead, second_near_miss, Extra::default()).id);
        if let Some(variant) = run.ids.later_restatement {
            run.ids.root_cause.push(self.message(&lead, root_cause_text(variant, world), Extra::default()).id);
        }
        self.reverse_decision_and_fix(run, &code, &first_code);
        self.change_setting(run);
        if self.random.chance(0.4) {
            let port = world.port.to_string();
            let port_fact = [world.component.as_str(), "listens_on_port", port.as_str()];
            run.ids.port_facts.push(self.fact(&lead, port_fact, None, Extra::default()).id);
        }
        self.filler(run, &lead, filler[2]);
        let outcome = format!("{} fix in place; {} passes", world.strategy(1).keyword, world.test_name);
        self.complete_phase("implement", outcome);
    }

    /// Some first edits do not compile (or type-check): the build fails at
    /// the edited line, a second edit fixes it, the build passes.
    fn build_error_and_fix(&mut self, run: &mut TaskRun, code: &CodeShape, first_code: &str) {
        let (world, lead) = (run.world, run.cast.lead.clone());
        let (Some(which), Some((line, old, new))) = (world.build_error, &code.type_fix) else { return };
        let (error_code, _) = world.language.build_errors()[which];
        let (command, passed) = match world.language {
            Language::Python => {
                (format!("mypy services/{}", world.module), "Success: no issues found in 14 source files".to_string())
            }
            _ => (
                "cargo build".to_string(),
                format!(
                    "   Compiling {CRATE_NAME} v{CRATE_VERSION} (/repo)\n    Finished `dev` profile [unoptimized + debuginfo] target(s) in 4.87s"
                ),
            ),
        };
        let exit_code = if world.language == Language::Python { 1 } else { 101 };
        let output = build_failure_output(world, error_code, code.buggy_line, first_code);
        self.bash(&lead, &command, output, exit_code, Extra::default());
        self.key_fact(error_code);
        let snippet = numbered_lines(*line, &[format!("{}{new}", code.indent)]);
        let type_fix = self.edit(&lead, &world.path, old.clone(), new.clone(), snippet);
        self.bash(&lead, &command, passed, 0, Extra::caused_by(&type_fix.id));
        run.ids.build_fix_edit = Some(type_fix.id);
    }

    /// The first decision is reversed by one that supersedes it; the edit
    /// that implements the new one is what makes the failing test pass.
    fn reverse_decision_and_fix(&mut self, run: &mut TaskRun, code: &CodeShape, first_code: &str) {
        let (world, lead) = (run.world, run.cast.lead.clone());
        let (first, second) = (world.strategy(0), world.strategy(1));
        let rationale =
            format!("{}; {} only hid the failure of {}", world.fill(second.rationale), first.keyword, world.test_name);
        let content = [world.decision_title(), world.fill(second.choice), rationale];
        let superseding = self.decision(&lead, content, Some(run.ids.first_decision.as_str()), Extra::important(0.85));
        self.key_fact(second.keyword);
        let second_code = world.strategy_code(1);
        let snippet = code.snippet_with(&second_code);
        let fix = self.edit(&lead, &world.path, first_code.to_string(), second_code, snippet);
        self.key_fact(&world.path);
        let tests = [world.test_id()];
        let output = passing_tests_output(world.language, &tests, &mut self.random);
        self.bash(&lead, &world.test_command(), output, 0, Extra::caused_by(&fix.id));
        run.ids.final_decision = superseding.id;
        run.ids.fix_edit = fix.id;
    }

    /// The fix changes a setting: the old fact is retracted from the
    /// change's time and the new one holds from then (a change, not a
    /// contradiction).
    fn change_setting(&mut self, run: &mut TaskRun) {
        let (world, lead) = (run.world, run.cast.lead.clone());
        let (predicate, _, _) = SETTINGS[world.setting];
        let change_ms = self.clock_ms + 1;
        let (old_value, new_value) = (world.old_value.to_string(), world.new_value.to_string());
        let retraction = json!({
            "subject": world.component, "predicate": predicate, "object": old_value,
            "valid_to": rfc3339(change_ms), "reason": format!("changed together with the fix for {}", world.error_name),
        });
        self.emit(&lead, "fact_retracted", retraction, Extra::caused_by(&run.ids.old_setting.id));
        let setting = [world.component.as_str(), predicate, new_value.as_str()];
        self.fact(&lead, setting, Some(change_ms), Extra::important(0.7));
        let text =
            format!("Changed {predicate} of {} from {old_value} to {new_value} as part of the fix.", world.component);
        self.message(&lead, text, Extra::default());
        if new_value.len() >= 2 {
            self.key_fact(&new_value);
        }
        run.ids.change_ms = change_ms;
    }

    fn test_phase(&mut self, run: &mut TaskRun) {
        let world = run.world;
        let (lead, tester) = (run.cast.lead.clone(), run.cast.tester.clone());
        if tester != lead {
            let summary = format!(
                "Fix for {} is in ({}); please run the whole suite.",
                world.error_name,
                world.strategy(1).keyword
            );
            let fields =
                (summary, vec![world.path.clone(), world.test_path.clone()], vec![run.ids.final_decision.clone()]);
            self.handoff(&lead, &tester, &world.task_id, fields);
        }
        let filler = self.split_filler(2);
        self.pause_minutes(1, 15);
        self.start_phase(&tester, "test", format!("Run the whole suite against the fix for {}", world.error_name));
        self.filler(run, &tester, filler[0]);
        self.run_whole_suite(world, &tester);
        if self.random.chance(0.45) {
            // The tester reads the deployment differently and says so
            // without retracting the lead's fact: a real conflict.
            let (predicate, objects) = CONFLICTS[world.conflict];
            let object = objects[world.conflict_objects[1]];
            let conflict = [world.component.as_str(), predicate, object];
            run.ids.conflicting_facts.push(self.fact(&tester, conflict, None, Extra::default()).id);
            self.key_fact(object);
        }
        self.filler(run, &tester, filler[1]);
        self.complete_phase("test", "suite green".to_string());
    }

    /// The tester's run of every test, the task's among them, and its report.
    fn run_whole_suite(&mut self, world: &TaskWorld, tester: &str) {
        let mut tests: Vec<String> =
            (0..self.random.between(7, 15)).map(|_| self.filler_test_name(world.language, world.module)).collect();
        let position = self.random.below(tests.len() + 1);
        tests.insert(position, world.test_id());
        let command = match world.language {
            Language::Rust => format!("cargo test -p {CRATE_NAME}"),
            Language::Python => "pytest -v".to_string(),
            Language::JavaScript => "node --test web/test/".to_string(),
        };
        let output = passing_tests_output(world.language, &tests, &mut self.random);
        self.bash(tester, &command, output, 0, Extra::default());
        self.key_fact(&world.test_name);
        let count = format!("{} tests", tests.len());
        let report = format!("Whole suite green: {count} pass, including {}.", world.test_name);
        self.message(tester, report, Extra::default());
        self.key_fact(&count);
    }

    fn review(&mut self, run: &mut TaskRun) {
        let world = run.world;
        let (tester, reviewer) = (run.cast.tester.clone(), run.cast.reviewer.clone());
        if tester != reviewer {
            let summary = format!("Suite green; the fix for {} is ready for review.", world.error_name);
            let fields = (summary, vec![world.path.clone()], vec![run.ids.final_decision.clone()]);
            self.handoff(&tester, &reviewer, &world.task_id, fields);
        }
        let filler = self.split_filler(2);
        self.pause_minutes(1, 20);
        self.start_phase(&reviewer, "review", format!("Review the change to {}", world.path));
        self.filler(run, &reviewer, filler[0]);
        let diff = self.diff_output(world);
        let args = json!({"args": ["diff", "main...HEAD", "--", world.path]});
        run.ids.diff = self.tool(&reviewer, "git", args, diff, 0, Extra::default()).id;
        self.key_fact(&world.path);
        let second = world.strategy(1);
        let text = format!(
            "Reviewed the {} change to {}: it reads well; keep {} as the regression test.",
            second.keyword, world.symbol, world.test_name
        );
        self.message(&reviewer, text, Extra::default());
        self.key_fact(second.keyword);
        self.review_verdicts(run);
        self.filler(run, &reviewer, filler[1]);
        let merged = format!("merged as {}", self.random.hex(7));
        let done = json!({"task_id": world.task_id, "status": "done", "note": merged});
        self.emit(&reviewer, "task_updated", done, Extra::default());
        self.complete_phase("review", format!("approved: {}", world.path));
    }

    /// What some reviews add: a decision that conflicts with the lead's, a
    /// pinned rule, a preference.
    fn review_verdicts(&mut self, run: &mut TaskRun) {
        let (world, reviewer) = (run.world, run.cast.reviewer.clone());
        if self.random.chance(0.35) {
            // The reviewer decides the same question otherwise and does
            // not supersede the lead's decision: two active decisions.
            let third = world.strategy(2);
            let rationale = format!("Reviewer's call: {}", world.fill(third.rationale));
            let content = [world.decision_title(), world.fill(third.choice), rationale];
            run.ids.reviewer_decision = Some(self.decision(&reviewer, content, None, Extra::important(0.7)).id);
            self.key_fact(third.keyword);
        }
        if self.random.chance(0.35) {
            let (setting, _, _) = SETTINGS[world.setting];
            let rule = self.random.pick(PINNED_RULES).replace("{component}", &world.component);
            let rule = rule.replace("{test}", &world.test_name).replace("{setting}", setting);
            let rule_message = self.message(&reviewer, format!("Rule from now on: {rule}."), Extra::important(0.9));
            let pin = json!({"item_id": rule_message.id, "reason": "a standing rule for this component"});
            self.emit(&reviewer, "memory_pinned", pin, Extra::caused_by(&rule_message.id));
        }
        if self.random.chance(0.15) {
            let key = format!("{}.review", world.component);
            let value = format!("{} needs a regression test named after the issue", world.component);
            self.emit(&reviewer, "preference_set", json!({"key": key, "value": value}), Extra::important(0.5));
        }
    }

    fn diff_output(&mut self, world: &TaskWorld) -> String {
        let code = CodeShape::of(world);
        let (path, start) = (&world.path, code.first_line);
        let header = code.lines[1].trim();
        let header = if world.language == Language::Python { code.lines[0].trim() } else { header };
        let index = (code.buggy_line - code.first_line) as usize;
        let mut body = Vec::new();
        for (offset, line) in code.lines.iter().enumerate().skip(2) {
            if offset == index {
                body.push(format!("-{line}"));
                body.push(format!("+{}{}", code.indent, world.strategy_code(1)));
            } else {
                body.push(format!(" {line}"));
            }
        }
        let count = code.lines.len() - 2;
        format!(
            "diff --git a/{path} b/{path}\nindex {}..{} 100644\n--- a/{path}\n+++ b/{path}\n@@ -{},{count} +{},{count} @@ {header}\n{}",
            self.random.hex(7),
            self.random.hex(7),
            start + 2,
            start + 2,
            body.join("\n"),
        )
    }

    // -------------------------------------------------------- ground truth

    fn record_story_truth(&mut self, run: &TaskRun) {
        let ids = &run.ids;
        self.truth.duplicate_groups.push(ids.root_cause.clone());
        if ids.port_facts.len() > 1 {
            self.truth.duplicate_groups.push(ids.port_facts.clone());
        }
        self.truth.near_misses.push((ids.near_miss[0].clone(), ids.near_miss[1].clone()));
        if ids.conflicting_facts.len() > 1 {
            self.truth.contradictions.push((ids.conflicting_facts[0].clone(), ids.conflicting_facts[1].clone()));
        }
        if let Some(reviewer_decision) = &ids.reviewer_decision {
            self.truth.contradictions.push((ids.final_decision.clone(), reviewer_decision.clone()));
        }
    }

    /// At least six questions per task, one or more of each kind, asked by
    /// any agent (every answer is shared).
    fn ask_questions(&mut self, run: &mut TaskRun) {
        let mut questions = self.lexical_questions(run);
        questions.extend(self.questions_by_meaning(run));
        for mut question in questions {
            run.questions_asked += 1;
            question.id = format!("{}-q{}", run.world.task_id, run.questions_asked);
            question.agent = self.random.pick(&self.agents).clone();
            self.truth.questions.push(question);
        }
    }

    /// Questions that share rare tokens (error name, symbol) with their
    /// answers, and what-fixed questions, which name the error too.
    fn lexical_questions(&mut self, run: &TaskRun) -> Vec<Question> {
        let (world, ids) = (run.world, &run.ids);
        let raised = ["Where is {error} raised?", "What raises {error}, and where?", "Which code path throws {error}?"];
        let raised = self.random.pick(&raised).replace("{error}", &world.error_name);
        let mut raised_answers = vec![ids.failing_run.clone(), ids.raised_in_fact.clone()];
        raised_answers.extend(ids.root_cause.iter().cloned());
        // The backtrace and the diff's hunk header show the file too.
        let defined = self.random.pick(&["Which file defines {symbol}?", "Where is {symbol} defined?"]);
        let defined = defined.replace("{symbol}", &world.symbol);
        let defined_answers = vec![ids.read_file.clone(), ids.failing_run.clone(), ids.diff.clone()];
        let fixed = self.random.pick(&["What fixed {error}?", "How was {error} fixed?"]);
        let fixed = fixed.replace("{error}", &world.error_name);
        let mut questions = vec![
            question(QuestionKind::Lexical, raised, raised_answers),
            question(QuestionKind::Lexical, defined, defined_answers),
            question(QuestionKind::FixedBy, fixed, vec![ids.fix_edit.clone(), ids.final_decision.clone()]),
        ];
        if let (Some(edit), Some(which)) = (&ids.build_fix_edit, world.build_error) {
            let (code, label) = world.language.build_errors()[which];
            let text = match world.language {
                Language::Python => format!("What fixed the mypy {code} error ({label}) in {}?", world.path),
                _ => format!("What fixed the {code} {label} error in {}?", world.path),
            };
            questions.push(question(QuestionKind::FixedBy, text, vec![edit.clone()]));
        }
        questions
    }

    /// Questions answered by meaning, by the graph or by time rather than
    /// by shared words.
    fn questions_by_meaning(&mut self, run: &TaskRun) -> Vec<Question> {
        let (world, ids) = (run.world, &run.ids);
        let asked = ["Which ticket said that {q}?", "Who complained that {q}?", "What was the problem where {q}?"];
        let paraphrase = self.random.pick(&asked).replace("{q}", &world.symptom_text(true));
        let paraphrase =
            question(QuestionKind::Paraphrase, paraphrase, vec![ids.issue.clone(), ids.planner_handoff.clone()]);
        // The decisions name the symbol and the error, never the file: the
        // file reaches them through the failure (file → error → decision).
        let mut decided = vec![ids.final_decision.clone()];
        decided.extend(ids.reviewer_decision.iter().cloned());
        let text = format!("What was finally decided for the code in {}?", world.path);
        let multi_hop =
            Question { entity: Some(world.path.clone()), ..question(QuestionKind::MultiHop, text, decided) };
        let (_, setting_name, _) = SETTINGS[world.setting];
        let as_of = ids.old_setting.unix_ms + (ids.change_ms - ids.old_setting.unix_ms) / 2;
        let text = format!("What was the {setting_name} of {}?", world.component);
        let old_value = vec![ids.old_setting.id.clone()];
        let temporal = Question { as_of: Some(rfc3339(as_of)), ..question(QuestionKind::Temporal, text, old_value) };
        vec![paraphrase, multi_hop, temporal]
    }

    /// Pinned items, important events, decisions nothing superseded, and
    /// preferences: read off the events, so the list cannot drift from them.
    fn collect_never_forget(&mut self) {
        let superseded: HashSet<&str> =
            self.events.iter().filter_map(|event| event["data"]["supersedes"].as_str()).collect();
        let mut seen = HashSet::new();
        for event in &self.events {
            let id = event["id"].as_str().expect("every event has an id");
            let important = event["importance"].as_f64().is_some_and(|importance| importance >= 0.9);
            let remembered = match event["kind"].as_str() {
                Some("memory_pinned") => event["data"]["item_id"].as_str(),
                Some("preference_set") => Some(id),
                Some("decision_made") if !superseded.contains(id) => Some(id),
                _ if important => Some(id),
                _ => None,
            };
            if let Some(remembered) = remembered {
                if seen.insert(remembered) {
                    self.truth.never_forget.push(remembered.to_string());
                }
            }
        }
    }

    // -------------------------------------------------------- filler

    /// Events that carry no ground truth: what agents do between the
    /// story's beats. None of them names a task's file, symbol or error.
    fn filler(&mut self, run: &TaskRun, owner: &str, count: usize) {
        for _ in 0..count {
            let language = if self.random.chance(0.7) {
                run.world.language
            } else {
                *self.random.pick(&[Language::Rust, Language::Python, Language::JavaScript])
            };
            match self.random.below(100) {
                0..=27 => self.filler_read(owner, language),
                28..=37 => self.filler_grep(owner, language),
                38..=51 => self.filler_test_run(owner, language),
                52..=58 => self.filler_git(owner, &run.world.task_id),
                59..=64 => self.filler_listing(owner, language),
                65..=67 => self.filler_scratch_note(owner, language),
                68..=69 => self.filler_flaky_run(owner),
                70..=84 => self.filler_chatter(owner, language),
                _ => {
                    let other = self.random.pick(&self.agents).clone();
                    self.filler_chatter(&other, language)
                }
            }
        }
    }

    /// A file no task is about: (module, stem, path).
    fn filler_path(&mut self, language: Language) -> (&'static str, &'static str, String) {
        loop {
            let module = *self.random.pick(MODULES);
            let stem = *self.random.pick(FILE_STEMS);
            let path = language.source_path(module, stem);
            if !self.reserved_paths.contains(&path) {
                return (module, stem, path);
            }
        }
    }

    fn filler_symbol(&mut self, language: Language) -> String {
        let snake = format!("{}_{}", self.random.pick(SYMBOL_VERBS), self.random.pick(SYMBOL_NOUNS));
        language.function_name(&snake)
    }

    fn filler_test_name(&mut self, language: Language, module: &str) -> String {
        let snake = format!("{}_{}", self.random.pick(SYMBOL_NOUNS), self.random.pick(FILLER_TEST_SUFFIXES));
        match language {
            Language::Rust => format!("{module}::{}::tests::{snake}", self.random.pick(FILE_STEMS)),
            Language::Python => format!("tests/{module}/test_{}.py::test_{snake}", self.random.pick(FILE_STEMS)),
            Language::JavaScript => snake,
        }
    }

    fn filler_code_line(&mut self, language: Language) -> String {
        let symbol = self.filler_symbol(language);
        let noun = *self.random.pick(SYMBOL_NOUNS);
        let other = *self.random.pick(SYMBOL_NOUNS);
        let type_name = camel_case(noun, true);
        let comment = *self.random.pick(CODE_COMMENTS);
        let choice = self.random.below(6);
        match (language, choice) {
            (Language::Rust, 0) => format!("pub fn {symbol}(&self, {noun}: &{type_name}) -> anyhow::Result<u64> {{"),
            (Language::Rust, 1) => {
                format!("    let {noun} = self.{other}.get(&{noun}_id).copied().unwrap_or_default();")
            }
            (Language::Rust, 2) => format!("    // {comment}"),
            (Language::Rust, 3) => format!("    self.{other}.insert({noun}.id, {noun}.clone());"),
            (Language::Rust, 4) => format!("pub struct {type_name}{} {{", camel_case(other, true)),
            (Language::Rust, _) => format!("    pub {noun}: u64,"),
            (Language::Python, 0) => format!("def {symbol}(self, {noun}):"),
            (Language::Python, 1) => format!("    {noun} = self.{other}.get({noun}_id, 0)"),
            (Language::Python, 2) => format!("    # {comment}"),
            (Language::Python, 3) => format!("    self.{other}[{noun}.id] = {noun}"),
            (Language::Python, 4) => format!("class {type_name}{}:", camel_case(other, true)),
            (Language::Python, _) => format!("    {noun}: int = 0"),
            (Language::JavaScript, 0) => format!("export function {symbol}({noun}) {{"),
            (Language::JavaScript, 1) => format!("  const {noun} = this.{other}.get({noun}Id) ?? 0;"),
            (Language::JavaScript, 2) => format!("  // {comment}"),
            (Language::JavaScript, 3) => format!("  this.{other}.set({noun}.id, {noun});"),
            (Language::JavaScript, 4) => format!("export class {type_name}{} {{", camel_case(other, true)),
            (Language::JavaScript, _) => format!("  {noun} = 0;"),
        }
    }

    fn filler_read(&mut self, agent: &str, language: Language) {
        let (_, _, path) = self.filler_path(language);
        let first_line = self.random.between(1, 300) as u32;
        let lines: Vec<String> = (0..self.random.between(6, 14)).map(|_| self.filler_code_line(language)).collect();
        let last_line = first_line + lines.len() as u32 - 1;
        let args = json!({"path": path, "start_line": first_line, "end_line": last_line});
        self.tool(agent, "read_file", args, numbered_lines(first_line, &lines), 0, Extra::default());
    }

    fn filler_grep(&mut self, agent: &str, language: Language) {
        let symbol = self.filler_symbol(language);
        let hits: Vec<String> = (0..self.random.between(0, 4))
            .map(|_| {
                let (_, _, path) = self.filler_path(language);
                format!("{path}:{}:    let value = {symbol}(input);", self.random.between(5, 500))
            })
            .collect();
        let args = json!({"pattern": symbol, "path": ".", "fixed_strings": true});
        let exit_code = if hits.is_empty() { 1 } else { 0 };
        self.tool(agent, "grep", args, hits.join("\n"), exit_code, Extra::default());
    }

    fn filler_test_run(&mut self, agent: &str, language: Language) {
        let module = *self.random.pick(MODULES);
        let tests: Vec<String> =
            (0..self.random.between(3, 9)).map(|_| self.filler_test_name(language, module)).collect();
        let command = match language {
            Language::Rust => format!("cargo test -p {CRATE_NAME} {module}::"),
            Language::Python => format!("pytest -v tests/{module}"),
            Language::JavaScript => format!("node --test web/test/{module}/"),
        };
        let output = passing_tests_output(language, &tests, &mut self.random);
        self.bash(agent, &command, output, 0, Extra::default());
    }

    /// A distractor: an unrelated test that fails once (an assertion on
    /// numbers), with no ground truth attached.
    fn filler_flaky_run(&mut self, agent: &str) {
        let (module, stem, path) = self.filler_path(Language::Rust);
        let case = format!("{}_{}", self.random.pick(SYMBOL_NOUNS), self.random.pick(FILLER_TEST_SUFFIXES));
        let test = format!("{module}::{stem}::tests::{case}");
        let (left, right) = (self.random.between(1, 999), self.random.between(1000, 1999));
        let (line, column) = (self.random.between(20, 600), self.random.between(5, 40));
        let output = format!(
            r#"running 1 test
test {test} ... FAILED

failures:

---- {test} stdout ----

thread '{test}' panicked at {path}:{line}:{column}:
assertion `left == right` failed
  left: {left}
 right: {right}
note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace


failures:
    {test}

test result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 12 filtered out; finished in 0.03s"#
        );
        self.bash(agent, &format!("cargo test -p {CRATE_NAME} {test}"), output, 101, Extra::default());
    }

    fn filler_git(&mut self, agent: &str, task_id: &str) {
        if self.random.chance(0.5) {
            let lines: Vec<String> = (0..5)
                .map(|_| {
                    let (hash, kind) = (self.random.hex(7), *self.random.pick(COMMIT_TYPES));
                    let (module, symbol) = (*self.random.pick(MODULES), self.filler_symbol(Language::Rust));
                    format!("{hash} {kind}({module}): tidy {symbol}")
                })
                .collect();
            self.tool(agent, "git", json!({"args": ["log", "--oneline", "-5"]}), lines.join("\n"), 0, Extra::default());
        } else {
            let output = format!("On branch fix/{task_id}\nnothing to commit, working tree clean");
            self.tool(agent, "git", json!({"args": ["status"]}), output, 0, Extra::default());
        }
    }

    fn filler_listing(&mut self, agent: &str, language: Language) {
        let module = *self.random.pick(MODULES);
        let (directory, extension) = match language {
            Language::Rust => (format!("src/{module}"), "rs"),
            Language::Python => (format!("services/{module}"), "py"),
            Language::JavaScript => (format!("web/src/{module}"), "js"),
        };
        let files: Vec<String> =
            (0..self.random.between(3, 9)).map(|_| format!("{}.{extension}", self.random.pick(FILE_STEMS))).collect();
        self.bash(agent, &format!("ls {directory}"), files.join("\n"), 0, Extra::default());
    }

    fn filler_scratch_note(&mut self, agent: &str, language: Language) {
        let (_, _, path) = self.filler_path(language);
        let symbol = self.filler_symbol(language);
        let text = match self.random.below(3) {
            0 => format!("scratch: check {path} around line {} later", self.random.between(10, 600)),
            1 => format!("note to self: {symbol} might need a benchmark before #{}", self.random.between(100, 9999)),
            _ => format!(
                "todo: ask about the {} flag on line {} of {path}",
                self.random.pick(SYMBOL_NOUNS),
                self.random.between(10, 600)
            ),
        };
        let data = json!({"role": "scratchpad", "text": text});
        self.emit(agent, "message_recorded", data, Extra { private: true, ..Extra::default() });
    }

    fn filler_chatter(&mut self, agent: &str, language: Language) {
        let (_, _, path) = self.filler_path(language);
        let symbol = self.filler_symbol(language);
        let number = self.random.between(100, 99_999);
        let text = match self.random.below(8) {
            0 => format!("Reading {path} next to see how {symbol} is used."),
            1 => format!("CI run #{number} on main is green ({} jobs).", self.random.between(4, 40)),
            2 => format!("Rebased on main at {}; no conflicts.", self.random.hex(7)),
            3 => format!("Skimmed {path} up to line {}: nothing there explains this issue.", number % 700),
            4 => format!("Waiting for integration job #{number} before touching anything else."),
            5 => format!("FYI {symbol} in {path} has an old TODO (#{number}); leaving it alone."),
            6 => format!(
                "Benchmarks for {symbol}: p50 {} us, p99 {} us, unchanged.",
                self.random.between(5, 400),
                number % 9000 + 400
            ),
            _ => format!(
                "Deploy train {number} leaves at {:02}:{:02} UTC.",
                self.random.between(0, 23),
                self.random.between(0, 59)
            ),
        };
        self.message(agent, text, Extra::default());
    }
}

/// A question without asker and id, which [`Generator::ask_questions`] sets.
fn question(kind: QuestionKind, text: String, answers: Vec<String>) -> Question {
    Question { id: String::new(), kind, agent: String::new(), text, as_of: None, entity: None, answers }
}

fn rfc3339(unix_ms: u64) -> String {
    Timestamp::from_unix_millis(unix_ms as i64).to_string()
}

#[cfg(test)]
mod tests {
    use std::collections::{HashMap, HashSet};

    use mneme_events::{DecodeLimits, decode_json};
    use mneme_projections::consolidation::ConsolidationPolicy;
    use mneme_projections::consolidation::lexical::{content_terms, lexically_equivalent};

    use super::*;

    fn sized(name: &str) -> Dataset {
        generate(7, GeneratorSize::parse(name).expect("a known size"))
    }

    fn events_by_id(dataset: &Dataset) -> HashMap<&str, &Value> {
        dataset.events.iter().map(|event| (event["id"].as_str().expect("an id"), event)).collect()
    }

    /// The text an event's memory is about, for word-level checks.
    fn content_text(event: &Value) -> String {
        let data = &event["data"];
        match event["kind"].as_str() {
            Some("message_recorded") => data["text"].as_str().unwrap_or_default().to_string(),
            Some("fact_asserted") => format!("{} {} {}", data["subject"], data["predicate"], data["object"]),
            _ => data.to_string(),
        }
    }

    #[test]
    fn the_same_seed_gives_the_same_bytes_and_another_seed_other_ones() {
        let size = GeneratorSize::parse("tiny").unwrap();
        let first = serde_json::to_string(&generate(42, size)).unwrap();
        assert_eq!(first, serde_json::to_string(&generate(42, size)).unwrap());
        assert_ne!(first, serde_json::to_string(&generate(43, size)).unwrap());
    }

    #[test]
    fn every_event_decodes_as_the_api_takes_it() {
        let dataset = sized("small");
        for (index, event) in dataset.events.iter().enumerate() {
            let bytes = serde_json::to_vec(event).unwrap();
            if let Err(error) = decode_json(&bytes, &DecodeLimits::default()) {
                panic!("event {index} does not decode: {error:?}\n{event}");
            }
            assert_eq!(event["swarm"], EVAL_SWARM);
            assert_eq!(event["id"].as_str().unwrap().len(), 26);
        }
    }

    #[test]
    fn ids_are_unique_and_times_strictly_increase() {
        let dataset = sized("small");
        let ids: HashSet<&str> = dataset.events.iter().map(|event| event["id"].as_str().unwrap()).collect();
        assert_eq!(ids.len(), dataset.events.len());
        let times: Vec<Timestamp> =
            dataset.events.iter().map(|event| event["ts"].as_str().unwrap().parse().unwrap()).collect();
        assert!(times.windows(2).all(|pair| pair[0] < pair[1]), "timestamps must strictly increase");
    }

    #[test]
    fn every_id_the_truth_names_is_an_event() {
        let dataset = sized("small");
        let events = events_by_id(&dataset);
        let truth = &dataset.truth;
        let named = truth
            .questions
            .iter()
            .flat_map(|question| question.answers.iter())
            .chain(truth.duplicate_groups.iter().flatten())
            .chain(truth.near_misses.iter().flat_map(|(a, b)| [a, b]))
            .chain(truth.contradictions.iter().flat_map(|(a, b)| [a, b]))
            .chain(truth.never_forget.iter())
            .chain(truth.phases.iter().map(|phase| &phase.phase_id));
        for id in named {
            assert!(events.contains_key(id.as_str()), "{id} is not an event");
        }
        let question_ids: HashSet<&str> = truth.questions.iter().map(|question| question.id.as_str()).collect();
        assert_eq!(question_ids.len(), truth.questions.len());
    }

    #[test]
    fn every_kind_of_question_is_asked_and_its_answers_are_visible_to_the_asker() {
        let dataset = sized("small");
        let events = events_by_id(&dataset);
        for kind in QuestionKind::ALL {
            assert!(dataset.truth.questions.iter().any(|question| question.kind == kind), "no {kind:?} question");
        }
        assert!(dataset.truth.questions.len() >= 5 * dataset.size.tasks);
        for question in &dataset.truth.questions {
            assert!(!question.answers.is_empty(), "{} has no answer", question.id);
            assert!(dataset.agents.contains(&question.agent));
            assert_eq!(question.as_of.is_some(), question.kind == QuestionKind::Temporal);
            assert_eq!(question.entity.is_some(), question.kind == QuestionKind::MultiHop);
            for answer in &question.answers {
                let event = events[answer.as_str()];
                let visible = event["scope"] == "shared" || event["agent"] == question.agent.as_str();
                assert!(visible, "{} cannot see its answer {answer}", question.agent);
            }
        }
    }

    #[test]
    fn temporal_answers_were_recorded_before_as_of_and_retracted_after_it() {
        let dataset = sized("small");
        let events = events_by_id(&dataset);
        for question in dataset.truth.questions.iter().filter(|question| question.kind == QuestionKind::Temporal) {
            let as_of: Timestamp = question.as_of.as_deref().unwrap().parse().unwrap();
            let answer = events[question.answers[0].as_str()];
            assert_eq!(answer["kind"], "fact_asserted");
            assert!(answer["ts"].as_str().unwrap().parse::<Timestamp>().unwrap() < as_of);
            let retracted_later = dataset.events.iter().any(|event| {
                event["kind"] == "fact_retracted"
                    && event["data"]["subject"] == answer["data"]["subject"]
                    && event["data"]["object"] == answer["data"]["object"]
                    && event["ts"].as_str().unwrap().parse::<Timestamp>().unwrap() > as_of
            });
            assert!(retracted_later, "{}: the old value is never replaced", question.id);
        }
    }

    #[test]
    fn multi_hop_answers_do_not_name_the_entity() {
        let dataset = sized("small");
        let events = events_by_id(&dataset);
        for question in dataset.truth.questions.iter().filter(|question| question.kind == QuestionKind::MultiHop) {
            let entity = question.entity.as_deref().unwrap();
            let mentions = dataset.events.iter().any(|event| event.to_string().contains(entity));
            assert!(mentions, "the entity {entity} appears in no event");
            for answer in &question.answers {
                assert!(!events[answer.as_str()].to_string().contains(entity), "{answer} names {entity} itself");
            }
        }
    }

    #[test]
    fn paraphrase_questions_share_no_number_or_code_token_with_their_answers() {
        let dataset = sized("small");
        let events = events_by_id(&dataset);
        for question in dataset.truth.questions.iter().filter(|question| question.kind == QuestionKind::Paraphrase) {
            let asked = content_terms(&question.text);
            assert!(asked.code_tokens().is_empty() && asked.numbers().is_empty(), "{}", question.text);
            for answer in &question.answers {
                let said = content_terms(&content_text(events[answer.as_str()]));
                let shared: Vec<&String> = asked.words().iter().filter(|word| said.words().contains(word)).collect();
                assert!(shared.len() <= 1, "{:?} shares {shared:?} with {answer}", question.text);
            }
        }
    }

    #[test]
    fn key_facts_are_in_the_events_of_the_phase_owner() {
        let dataset = sized("small");
        for phase in &dataset.truth.phases {
            let start = dataset.events.iter().position(|event| event["id"] == phase.phase_id.as_str()).unwrap();
            let end = start
                + dataset.events[start..]
                    .iter()
                    .position(|event| event["data"]["phase_id"] == phase.phase_id.as_str())
                    .expect("every phase completes");
            let text: String = dataset.events[start..=end]
                .iter()
                .filter(|event| event["agent"] == phase.agent.as_str())
                .map(|event| event.to_string().to_lowercase())
                .collect();
            assert!((2..=5).contains(&phase.key_facts.len()), "{:?}", phase.key_facts);
            for fact in &phase.key_facts {
                assert!(text.contains(&fact.to_lowercase()), "{fact} is not in phase {}", phase.phase_id);
            }
        }
    }

    #[test]
    fn contradictions_are_unretracted_conflicts_on_single_valued_facts_or_unsuperseded_decisions() {
        let dataset = sized("small");
        let events = events_by_id(&dataset);
        let policy = ConsolidationPolicy::default();
        assert!(!dataset.truth.contradictions.is_empty());
        for (older, newer) in &dataset.truth.contradictions {
            let (older, newer) = (events[older.as_str()], events[newer.as_str()]);
            assert!(older["ts"].as_str() < newer["ts"].as_str());
            assert_eq!(older["kind"], newer["kind"]);
            if older["kind"] == "fact_asserted" {
                let predicate = older["data"]["predicate"].as_str().unwrap();
                assert!(policy.is_single_valued(predicate), "{predicate} is multi-valued by default");
                assert_eq!(older["data"]["subject"], newer["data"]["subject"]);
                assert_eq!(older["data"]["predicate"], newer["data"]["predicate"]);
                assert_ne!(older["data"]["object"], newer["data"]["object"]);
                let retracted = dataset.events.iter().any(|event| {
                    event["kind"] == "fact_retracted"
                        && event["data"]["object"] == older["data"]["object"]
                        && event["data"]["subject"] == older["data"]["subject"]
                });
                assert!(!retracted, "a retracted fact is a change, not a contradiction");
            } else {
                assert_eq!(older["kind"], "decision_made");
                assert_eq!(older["data"]["title"], newer["data"]["title"]);
                assert_ne!(older["data"]["choice"], newer["data"]["choice"]);
                assert!(newer["data"]["supersedes"].is_null());
            }
        }
    }

    #[test]
    fn near_misses_differ_in_what_matters_and_duplicates_keep_their_guards() {
        let dataset = sized("small");
        let events = events_by_id(&dataset);
        for (first, second) in &dataset.truth.near_misses {
            let (first, second) = (events[first.as_str()], events[second.as_str()]);
            assert_eq!(first["agent"], second["agent"]);
            let (first, second) = (content_terms(&content_text(first)), content_terms(&content_text(second)));
            let guards_differ = first.numbers() != second.numbers()
                || first.code_tokens() != second.code_tokens()
                || first.negation_count() != second.negation_count();
            assert!(guards_differ && !lexically_equivalent(&first, &second));
        }
        for group in &dataset.truth.duplicate_groups {
            assert!((2..=3).contains(&group.len()));
            let members: Vec<&Value> = group.iter().map(|id| events[id.as_str()]).collect();
            assert!(members.iter().all(|event| event["agent"] == members[0]["agent"]));
            assert!(members.iter().all(|event| event["kind"] == members[0]["kind"]));
            let terms: Vec<_> = members.iter().map(|event| content_terms(&content_text(event))).collect();
            for other in &terms[1..] {
                assert_eq!(other.numbers(), terms[0].numbers());
                assert_eq!(other.code_tokens(), terms[0].code_tokens());
                assert_eq!(other.negation_count(), terms[0].negation_count());
            }
        }
    }

    #[test]
    fn never_forget_holds_pins_preferences_and_active_decisions_only() {
        let dataset = sized("small");
        let events = events_by_id(&dataset);
        let superseded: HashSet<&str> =
            dataset.events.iter().filter_map(|event| event["data"]["supersedes"].as_str()).collect();
        let pinned: HashSet<&str> = dataset
            .events
            .iter()
            .filter(|event| event["kind"] == "memory_pinned")
            .map(|event| event["data"]["item_id"].as_str().unwrap())
            .collect();
        assert!(!pinned.is_empty());
        for id in &dataset.truth.never_forget {
            let event = events[id.as_str()];
            let kind = event["kind"].as_str().unwrap();
            let important = event["importance"].as_f64().is_some_and(|importance| importance >= 0.9);
            let active_decision = kind == "decision_made" && !superseded.contains(id.as_str());
            assert!(important || active_decision || kind == "preference_set" || pinned.contains(id.as_str()));
        }
        assert!(superseded.iter().all(|id| !dataset.truth.never_forget.iter().any(|kept| kept == id)));
    }

    #[test]
    fn tiny_is_small_enough_for_quick_tests() {
        let dataset = sized("tiny");
        assert_eq!(dataset.agents, ["planner", "coder-1", "reviewer"]);
        assert!(dataset.events.len() < 200, "{} events", dataset.events.len());
        assert_eq!(dataset.truth.phases.len(), 2 * 4);
    }

    #[test]
    fn two_agents_and_many_agents_both_make_a_story() {
        for (agents, expected) in [(2, "coder-1"), (12, "coder-7")] {
            let size = GeneratorSize { agents, tasks: 3, filler_per_phase: 2 };
            let dataset = generate(1, size);
            assert_eq!(dataset.agents.last().unwrap(), expected);
            assert_eq!(dataset.truth.phases.len(), 12);
            for event in &dataset.events {
                decode_json(&serde_json::to_vec(event).unwrap(), &DecodeLimits::default()).unwrap();
            }
        }
    }
}
