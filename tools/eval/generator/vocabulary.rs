//! The word lists names, symptoms, causes, fixes and chatter are drawn
//! from: constants only, read by the world, the story and the filler.

#[rustfmt::skip]
pub(super) const MODULES: &[&str] = &[
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
pub(super) const FILE_STEMS: &[&str] = &[
    "apply", "reconcile", "store", "client", "codec", "retry", "limits", "batch", "worker", "handler", "router",
    "settings", "schema", "migrate", "validate", "merge", "lock", "pool", "window", "encoder", "decoder", "parser",
    "executor", "registry", "resolver", "mapper", "builder", "loader", "writer", "reader", "sink", "source", "filter",
    "policy", "budget", "timer", "cleanup", "compactor", "checkpoint", "index", "totals", "balance", "replay",
    "stream", "fanout", "sweeper", "convert", "state",
];

#[rustfmt::skip]
pub(super) const COMPONENT_ROLES: &[&str] = &[
    "reconciler", "worker", "gateway", "scheduler", "exporter", "indexer", "poller", "relay", "api", "consumer",
    "producer", "sweeper", "importer", "aggregator", "notifier", "daemon", "syncer", "dispatcher", "collector",
    "publisher", "watcher", "migrator", "cron", "frontend",
];

#[rustfmt::skip]
pub(super) const ERROR_CONCEPTS: &[&str] = &[
    "Overflow", "Underflow", "Timeout", "Conflict", "Checksum", "Stale", "Duplicate", "Missing", "Corrupt",
    "Exhausted", "Mismatch", "Poisoned", "Deadline", "Quota", "Precision", "Ordering", "Encoding", "Lease", "Version",
    "Capacity", "Range", "Signature", "Expiry", "Drift", "Rollover", "Truncation", "Replay", "Backpressure",
    "Handshake", "Serialization", "Contention", "Cursor", "Partition", "Rounding", "Permission", "Idempotency",
    "Cardinality", "Window", "Skew", "Fencing",
];

#[rustfmt::skip]
pub(super) const SYMBOL_VERBS: &[&str] = &[
    "apply", "compute", "load", "store", "merge", "flush", "reconcile", "resolve", "validate", "encode", "decode",
    "parse", "schedule", "dispatch", "refresh", "rotate", "compact", "rebuild", "replay", "settle", "allocate",
    "release", "acquire", "emit", "collect", "prune", "expire", "normalize", "render", "track",
];

/// Single words: task symbols are `verb_module_noun`, filler symbols
/// `verb_noun`, so the two never coincide.
#[rustfmt::skip]
pub(super) const SYMBOL_NOUNS: &[&str] = &[
    "entry", "batch", "balance", "cursor", "window", "record", "frame", "chunk", "lease", "offset", "total", "header",
    "payload", "event", "bucket", "page", "row", "segment", "manifest", "span", "slot", "digest", "ticket", "receipt",
    "voucher", "watermark", "epoch", "delta", "grant", "credit", "debit", "hold", "marker", "cohort", "tier", "limit",
    "sample", "job", "task", "claim",
];

pub(super) const FIELDS: &[&str] =
    &["balance", "total", "counter", "watermark", "offset", "usage", "backlog", "quota_used", "in_flight", "sequence"];

#[rustfmt::skip]
pub(super) const TEST_VERBS: &[&str] = &[
    "rejects", "keeps", "handles", "preserves", "survives", "detects", "retries", "orders", "rounds", "dedupes",
    "caps", "reports",
];

#[rustfmt::skip]
pub(super) const TEST_CONDITIONS: &[&str] = &[
    "on_overflow", "after_restart", "under_contention", "across_midnight", "with_large_amounts", "on_stale_cursor",
    "on_duplicate_delivery", "after_timeout", "with_empty_batch", "at_capacity", "on_clock_skew", "during_failover",
    "with_unicode_names", "on_partial_failure", "after_rollover", "with_foreign_currency",
];

/// Disjoint from [`TEST_CONDITIONS`], so filler tests never carry a task's name.
pub(super) const FILLER_TEST_SUFFIXES: &[&str] =
    &["round_trips", "is_idempotent", "uses_defaults", "works", "rejects_empty", "sorts_stably", "parses_minimal"];

/// What users see, said twice: (as the issue says it, as a question says
/// it). The two sides share no content word, so a paraphrase question is
/// answerable only by meaning.
pub(super) const SYMPTOM_SUBJECTS: &[(&str, &str)] = &[
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

pub(super) const SYMPTOM_FAILURES: &[(&str, &str)] = &[
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

pub(super) const SYMPTOM_TRIGGERS: &[(&str, &str)] = &[
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

pub(super) const ISSUE_CONTEXT: &[&str] = &[
    "Three customers wrote in about it this week.",
    "It started after the last release.",
    "Support has a manual workaround, but it does not scale.",
    "Finance flagged it during the monthly close.",
    "The on-call engineer saw it in the production logs.",
    "A partner escalated it through their account manager.",
];

/// Why the function fails, continuing "`symbol` in `path` ...".
pub(super) const MECHANISMS: &[&str] = &[
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
pub(super) const CONDITIONS: &[&str] = &[
    "once the batch holds more than {n} entries",
    "after {n} consecutive retries",
    "when more than {n} workers run at once",
    "for payloads above {n} KiB",
    "when the queue is deeper than {n} messages",
];

/// A single-valued setting that the fix changes: (predicate, how a
/// question names it, values).
pub(super) const SETTINGS: &[(&str, &str, &[u32])] = &[
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
pub(super) const CONFLICTS: &[(&str, &[&str])] = &[
    ("stores_data_in", &["postgres", "mysql", "redis", "sqlite", "dynamodb", "cassandra"]),
    ("deployed_in_region", &["eu-west-1", "us-east-1", "us-west-2", "ap-southeast-2", "eu-central-1"]),
    ("serialization_format", &["json", "protobuf", "msgpack", "avro", "cbor"]),
    ("owned_by_team", &["payments", "platform", "growth", "core-infra", "billing-ops", "risk"]),
    ("hosted_on", &["kubernetes", "nomad", "ecs", "bare-metal", "lambda"]),
];

/// A way to fix the bug: the decision's choice and rationale, and the line
/// that implements it per language. `{error}`, `{field}` and `{limit}` are
/// filled in per task.
pub(super) struct Strategy {
    /// A word of the choice that a summary of the decision should keep.
    pub(super) keyword: &'static str,
    pub(super) choice: &'static str,
    pub(super) rationale: &'static str,
    pub(super) rust: &'static str,
    pub(super) python: &'static str,
    pub(super) javascript: &'static str,
}

pub(super) const STRATEGIES: &[Strategy] = &[
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
pub(super) const RUST_BUILD_ERRORS: &[(&str, &str)] = &[
    ("E0308", "mismatched types"),
    ("E0599", "no method found"),
    ("E0425", "cannot find value"),
    ("E0382", "borrow of moved value"),
];
pub(super) const PYTHON_BUILD_ERRORS: &[(&str, &str)] = &[
    ("arg-type", "incompatible argument type"),
    ("assignment", "incompatible assignment"),
    ("union-attr", "optional attribute"),
];

pub(super) const HANDOFF_CONSTRAINTS: &[&str] = &[
    "no schema migrations in this change",
    "keep the public API backwards compatible",
    "every fix lands with a regression test",
    "do not log customer identifiers",
    "stay within the current memory budget of the service",
];

pub(super) const CONVENTIONS: &[(&str, &str)] = &[
    ("rust.errors", "thiserror enums per module; no unwrap() outside tests"),
    ("rust.format", "cargo fmt with max_width = 120; clippy -D warnings must pass"),
    ("python.style", "ruff and black, line length 110, type hints on public functions"),
    ("tests.regressions", "every bug fix lands with a regression test that failed before the fix"),
    ("commits", "conventional commits, one logical change per commit, reference the issue"),
    ("logging.secrets", "never log tokens or customer identifiers, not even truncated"),
    ("review.size", "keep pull requests under 400 changed lines"),
];

pub(super) const PINNED_RULES: &[&str] = &[
    "never deploy {component} without running {test} first",
    "never lower the {setting} of {component} without a load test",
    "changes to {component} need a second reviewer from the owning team",
    "{component} must keep {test} as a required check in CI",
];

pub(super) const CODE_COMMENTS: &[&str] = &[
    "keep in sync with the schema",
    "hot path: avoid allocations here",
    "see the runbook before changing this",
    "callers rely on the sort order",
    "the lock is held by the caller",
    "values are in minor units",
];

pub(super) const COMMIT_TYPES: &[&str] = &["fix", "feat", "refactor", "chore", "test", "docs", "perf"];
