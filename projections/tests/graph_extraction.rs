//! Golden tests for the fact graph's extraction rules, on real-looking tool
//! outputs and messages, and on the example trajectory.

use std::collections::BTreeSet;

use mneme_events::{
    Event, EventId, EventKind, HandoffSent, JsonText, MessageRecorded, Scope, Timestamp, ToolResultRecorded,
};
use mneme_projections::graph::{EntityKind, FactGraph, GraphQuery};
use serde_json::json;

mod common;

use common::trajectory_graph;

/// 2026-01-06T09:00:00Z.
const START_MS: i64 = 1_767_690_000_000;

fn at(second: u64) -> Timestamp {
    Timestamp::from_unix_millis(START_MS + second as i64 * 1000)
}

fn event(seq: u64, agent: &str, kind: EventKind) -> Event {
    Event::new("demo", agent, kind)
        .with_id(EventId::from_parts(START_MS as u64 + seq * 1000, u128::from(seq)))
        .with_ts(at(seq))
        .with_scope(Scope::Shared)
}

fn tool(name: &str, args: serde_json::Value, output: &str, exit_code: i32) -> EventKind {
    EventKind::ToolResultRecorded(ToolResultRecorded {
        tool: name.to_string(),
        args: JsonText::from_value(&args),
        output: output.to_string(),
        exit_code: Some(exit_code),
        duration_ms: Some(100),
    })
}

fn message(text: &str) -> EventKind {
    EventKind::MessageRecorded(MessageRecorded { role: "assistant".to_string(), text: text.to_string() })
}

/// A graph of `kinds` applied in order by `agent`, seqs 1, 2, 3...
fn graph_of(agent: &str, kinds: Vec<EventKind>) -> FactGraph {
    let mut graph = FactGraph::new();
    for (index, kind) in kinds.into_iter().enumerate() {
        let seq = index as u64 + 1;
        graph.apply(seq, &event(seq, agent, kind));
    }
    graph
}

fn edge_ids(graph: &FactGraph) -> BTreeSet<String> {
    graph.edges().into_iter().map(|edge| edge.id).collect()
}

fn node_ids(graph: &FactGraph, kind: EntityKind) -> Vec<String> {
    graph.nodes().into_iter().filter(|node| node.kind == kind).map(|node| node.id.clone()).collect()
}

fn assert_edges(graph: &FactGraph, expected: &[&str]) {
    let edges = edge_ids(graph);
    for id in expected {
        assert!(
            edges.contains(*id),
            "missing edge {id}\nedges:\n{}",
            edges.iter().cloned().collect::<Vec<_>>().join("\n")
        );
    }
}

fn edge(graph: &FactGraph, id: &str) -> mneme_projections::graph::Edge {
    graph.edges().into_iter().find(|edge| edge.id == id).unwrap_or_else(|| panic!("no edge {id}"))
}

fn provenance_seqs(provenance: &[mneme_projections::ProvenanceRef]) -> Vec<u64> {
    provenance.iter().map(|reference| reference.seq).collect()
}

/// Ids of what an event's item node references.
fn item_references(graph: &FactGraph, seq: u64) -> Vec<String> {
    let item = format!("item:{}", event(seq, "x", message("x")).id);
    let prefix = format!("{item} -references-> ");
    graph.edges_of(&item).into_iter().filter_map(|edge| edge.id.strip_prefix(&prefix).map(str::to_string)).collect()
}

// ------------------------------------------------------------------ Python

const PYTEST_NATIVE: &str = r#"============================= test session starts ==============================
platform linux -- Python 3.11.7, pytest-8.3.4, pluggy-1.5.0
rootdir: /repo/clients/python
configfile: pyproject.toml
collected 4 items

tests/test_client.py ..F.                                                [100%]

=================================== FAILURES ===================================
_____________________ test_get_refreshes_expired_session _____________________
Traceback (most recent call last):
  File "/repo/clients/python/tests/test_client.py", line 37, in test_get_refreshes_expired_session
    assert client.get("/v1/me") == {"id": "user-42"}
           ^^^^^^^^^^^^^^^^^^^^
  File "/repo/clients/python/authsvc/client.py", line 48, in get
    self.refresh()
  File "/repo/clients/python/authsvc/client.py", line 41, in refresh
    self.session = self._session_from(resp.json())
                   ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/repo/clients/python/authsvc/client.py", line 34, in _session_from
    return Session(body["access_token"], body["refresh_token"], time.time() + body["expires_in"])
                                         ~~~~^^^^^^^^^^^^^^^^^
KeyError: 'refresh_token'
=========================== short test summary info ============================
FAILED tests/test_client.py::test_get_refreshes_expired_session - KeyError: 'refresh_token'
========================= 1 failed, 3 passed in 0.23s ========================="#;

const PYTEST_LONG: &str = r#"=================================== FAILURES ===================================
_____________________ test_get_refreshes_expired_session _____________________

    def test_get_refreshes_expired_session():
        client = AuthClient("http://auth", FakeHttp())
>       assert client.get("/v1/me") == {"id": "user-42"}

tests/test_client.py:37: 
_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ 

self = <authsvc.client.AuthClient object at 0x7f3b2c1d0e50>, path = '/v1/me'

    def get(self, path: str) -> dict:
        if time.time() >= self.session.expires_at:
>           self.refresh()

authsvc/client.py:48: 
_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ 

    def refresh(self) -> Session:
        resp = self.http.post(f"{self.base_url}/v1/token/refresh")
>       self.session = self._session_from(resp.json())

authsvc/client.py:41: 
_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ 

    def _session_from(self, body: dict) -> Session:
>       return Session(body["access_token"], body["refresh_token"], time.time() + body["expires_in"])
E       KeyError: 'refresh_token'

authsvc/client.py:34: KeyError
=========================== short test summary info ============================
FAILED tests/test_client.py::test_get_refreshes_expired_session - KeyError: 'refresh_token'"#;

#[test]
fn pytest_traceback_gives_a_normalised_signature() {
    let graph = graph_of(
        "coder",
        vec![tool("bash", json!({"cmd": "cd clients/python && pytest --tb=native", "cwd": "/repo"}), PYTEST_NATIVE, 1)],
    );
    let signature = "error:python:KeyError:_session_from<refresh<get";
    assert_edges(
        &graph,
        &[
            "agent:coder -runs-> command:pytest --tb=native",
            "agent:coder -uses-> tool:bash",
            &format!("command:pytest --tb=native -fails_with-> {signature}"),
            &format!("{signature} -instance_of-> error:KeyError"),
        ],
    );
    let error = graph.node(signature).expect("signature node");
    assert_eq!(error.kind, EntityKind::Error);
    assert_eq!(error.attributes["error_type"], "KeyError");
    assert_eq!(error.attributes["language"], "python");
    assert_eq!(error.attributes["message"], "'refresh_token'");
    // Paths in the output are relative to `cd clients/python`, or absolute
    // under the workspace root `/repo`; both become workspace-relative.
    // `error:KeyError` is related already (`instance_of`), not mentioned.
    assert_eq!(
        item_references(&graph, 1),
        vec![
            "file:clients/python/authsvc/client.py",
            "file:clients/python/pyproject.toml",
            "file:clients/python/tests/test_client.py",
        ]
    );
}

#[test]
fn pytest_long_and_short_formats_give_the_same_signature() {
    let short = "_____ test_get_refreshes_expired_session _____\n\
                 tests/test_client.py:37: in test_get_refreshes_expired_session\n    assert client.get(\"/v1/me\")\n\
                 authsvc/client.py:48: in get\n    self.refresh()\n\
                 authsvc/client.py:41: in refresh\n    self.session = self._session_from(resp.json())\n\
                 authsvc/client.py:34: in _session_from\n    return Session(body[\"access_token\"])\n\
                 E   KeyError: 'refresh_token'";
    for output in [PYTEST_LONG, short] {
        let graph = graph_of("coder", vec![tool("bash", json!({"command": "pytest"}), output, 1)]);
        assert_edges(&graph, &["command:pytest -fails_with-> error:python:KeyError:_session_from<refresh<get"]);
    }
}

#[test]
fn a_bare_pytest_summary_still_names_the_failure() {
    let output = "FAILED tests/test_api.py::test_login[admin] - AssertionError: assert 401 == 200\n1 failed in 0.1s";
    let graph = graph_of("coder", vec![tool("bash", json!({"cmd": "pytest -q --tb=no"}), output, 1)]);
    assert_edges(&graph, &["command:pytest -q --tb=no -fails_with-> error:python:AssertionError:test_login"]);
}

// -------------------------------------------------------------------- Rust

const CARGO_TEST_PANIC: &str = r#"   Compiling auth-service v0.4.2 (/repo)
    Finished `test` profile [unoptimized + debuginfo] target(s) in 14.82s
     Running unittests src/lib.rs (target/debug/deps/auth_service-3f9a2c1d8e7b6a50)

running 42 tests
test auth::token::tests::refresh_access_token_rotates_refresh_token ... FAILED
test auth::token::tests::reused_refresh_token_revokes_family ... ok

failures:

---- auth::token::tests::refresh_access_token_rotates_refresh_token stdout ----
thread 'auth::token::tests::refresh_access_token_rotates_refresh_token' panicked at src/auth/token.rs:125:9:
assertion `left != right` failed: refresh token must rotate on every use
  left: "rt_4q9Xc2W0mZbH7tKp1sVd8eYf"
 right: "rt_4q9Xc2W0mZbH7tKp1sVd8eYf"
stack backtrace:
   0: __rustc::rust_begin_unwind
             at /rustc/4eb161250e340c8f48f66e2b929ef4a5bed7c181/library/std/src/panicking.rs:697:5
   1: core::panicking::panic_fmt
             at /rustc/4eb161250e340c8f48f66e2b929ef4a5bed7c181/library/core/src/panicking.rs:75:14
   2: core::panicking::assert_failed_inner
   3: core::panicking::assert_failed
             at /rustc/4eb161250e340c8f48f66e2b929ef4a5bed7c181/library/core/src/panicking.rs:380:5
   4: auth_service::auth::token::TokenIssuer::refresh_access_token
             at ./src/auth/token.rs:98:9
   5: auth_service::auth::token::tests::refresh_access_token_rotates_refresh_token::{{closure}}
             at ./src/auth/token.rs:121:58
   6: core::ops::function::FnOnce::call_once
             at /rustc/4eb161250e340c8f48f66e2b929ef4a5bed7c181/library/core/src/ops/function.rs:250:5
note: Some details are omitted, run with `RUST_BACKTRACE=full` for a verbose backtrace.


failures:
    auth::token::tests::refresh_access_token_rotates_refresh_token

test result: FAILED. 41 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.43s

error: test failed, to rerun pass `--lib`"#;

#[test]
fn cargo_test_panic_with_backtrace() {
    let graph = graph_of(
        "coder",
        vec![tool("bash", json!({"cmd": "RUST_BACKTRACE=1 cargo test", "cwd": "/repo"}), CARGO_TEST_PANIC, 101)],
    );
    let signature = "error:rust:assertion_failed:refresh_access_token<refresh_access_token_rotates_refresh_token";
    assert_edges(&graph, &[&format!("command:cargo test -fails_with-> {signature}")]);
    assert_eq!(
        graph.node(signature).expect("signature").attributes["message"],
        "assertion `left != right` failed: refresh token must rotate on every use"
    );
    // Library frames, hashes and random tokens stay out; paths in the
    // backtrace and the test binary's path do too.
    assert_eq!(item_references(&graph, 1), vec!["file:src/auth/token.rs", "file:src/lib.rs"]);
    assert_eq!(node_ids(&graph, EntityKind::Error), vec![signature.to_string()]);
}

#[test]
fn rust_panics_without_backtrace_and_compiler_errors() {
    let unwrap = "thread 'main' panicked at src/main.rs:12:31:\ncalled `Option::unwrap()` on a `None` value\n\
                  note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace";
    let test_panic = "---- store::tests::find_by_email stdout ----\n\
                      thread 'store::tests::find_by_email' panicked at src/store.rs:88:5:\nindex out of bounds: the len is 0 but the index is 0";
    let old_format = "thread 'main' panicked at 'attempt to add with overflow', src/counter.rs:7:5";
    let compiler = "    Checking auth-service v0.4.2 (/repo)\nerror[E0432]: unresolved import `crate::auth::refresh`\n \
                    --> src/auth/token.rs:7:5\n  |\n7 | use crate::auth::refresh::{new_refresh_token};\n  |     ^^^^ could not find `refresh` in `auth`\n\n\
                    error: could not compile `auth-service` (lib) due to 1 previous error";
    let graph = graph_of(
        "coder",
        vec![
            tool("bash", json!({"cmd": "cargo run"}), unwrap, 101),
            tool("bash", json!({"cmd": "cargo test store"}), test_panic, 101),
            tool("bash", json!({"cmd": "cargo run --release"}), old_format, 101),
            tool("bash", json!({"cmd": "cargo check --all-targets"}), compiler, 101),
        ],
    );
    assert_edges(
        &graph,
        &[
            "command:cargo run -fails_with-> error:rust:unwrap_none:main.rs",
            "command:cargo test store -fails_with-> error:rust:index_out_of_bounds:find_by_email",
            "command:cargo run --release -fails_with-> error:rust:arithmetic_overflow:counter.rs",
            "command:cargo check --all-targets -fails_with-> error:rustc:E0432:token.rs",
        ],
    );
}

// ------------------------------------------------------------ JavaScript

const NODE_TEST_FAILURE: &str = r#"> dashboard@1.8.0 test
> node --test test/

✔ decodeExpiry reads exp in milliseconds (1.13ms)
✖ scheduleRefresh fires one minute before expiry (1.34ms)
  TypeError: Cannot read properties of undefined (reading 'exp')
      at msUntilRefresh (file:///repo/web/src/session.js:41:25)
      at scheduleRefresh (file:///repo/web/src/session.js:45:71)
      at TestContext.<anonymous> (file:///repo/web/test/session.test.js:16:3)
      at Test.runInAsyncScope (node:async_hooks:214:14)
      at Test.run (node:internal/test_runner/test:1047:25)
      at async Test.processPendingSubtests (node:internal/test_runner/test:744:7)
ℹ tests 4
ℹ fail 1"#;

#[test]
fn node_stack_trace() {
    let graph = graph_of(
        "coder",
        vec![tool("bash", json!({"cmd": "cd web && npm test", "cwd": "/repo"}), NODE_TEST_FAILURE, 1)],
    );
    let signature = "error:js:TypeError:msUntilRefresh<scheduleRefresh<TestContext.anonymous";
    assert_edges(
        &graph,
        &[
            &format!("command:npm test -fails_with-> {signature}"),
            &format!("{signature} -instance_of-> error:TypeError"),
        ],
    );
    assert_eq!(item_references(&graph, 1), vec!["file:web/src/session.js", "file:web/test/session.test.js"]);
}

// -------------------------------------------------------------------- Go

#[test]
fn go_panic_and_test_failure() {
    let panic = "panic: runtime error: invalid memory address or nil pointer dereference\n\
                 [signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x4a2b1c]\n\ngoroutine 1 [running]:\n\
                 github.com/acme/auth/internal/server.(*Server).handle(0x0, {0x0, 0x0})\n\
                 \t/home/ci/auth/internal/server/server.go:42 +0x1d\n\
                 github.com/acme/auth/internal/server.Run(...)\n\t/home/ci/auth/internal/server/run.go:17\n\
                 main.main()\n\t/home/ci/auth/cmd/auth/main.go:10 +0x25\nexit status 2";
    let test_failure = "=== RUN   TestRefresh\n=== RUN   TestRefresh/expired\n    refresh_test.go:31: got 401, want 200\n\
                        --- FAIL: TestRefresh (0.00s)\n    --- FAIL: TestRefresh/expired (0.00s)\nFAIL\n\
                        FAIL\tgithub.com/acme/auth/internal/token\t0.012s";
    let graph = graph_of(
        "coder",
        vec![
            tool("bash", json!({"cmd": "go run ./cmd/auth"}), panic, 2),
            tool("bash", json!({"cmd": "go test ./..."}), test_failure, 1),
        ],
    );
    assert_edges(
        &graph,
        &[
            "command:go run ./cmd/auth -fails_with-> error:go:nil_pointer_dereference:Server.handle<Run<main",
            "command:go test ./... -fails_with-> error:go:test_failed:TestRefresh",
        ],
    );
}

#[test]
fn an_unrecognised_failure_is_named_by_exit_code_and_command() {
    let output = "✓  rust / test   3m17s\nX  rust / sqlx-offline   2m13s";
    let graph = graph_of("coder", vec![tool("bash", json!({"cmd": "gh pr checks 231 --watch"}), output, 1)]);
    let error = "error:exit_1:gh pr checks 231 --watch";
    assert_edges(&graph, &[&format!("command:gh pr checks 231 --watch -fails_with-> {error}")]);
    assert_eq!(graph.node(error).expect("error").attributes["exit_code"], "1");
}

// ------------------------------------------------------- fixes and edits

#[test]
fn an_edit_then_a_passing_rerun_fixes_the_error() {
    let failing = tool("bash", json!({"cmd": "cd web && npm test", "cwd": "/repo"}), NODE_TEST_FAILURE, 1);
    let edit = |path: &str| {
        tool(
            "edit_file",
            json!({"path": path, "old_string": "session.claims.exp", "new_string": "session.expiresAt"}),
            "The file has been edited.",
            0,
        )
    };
    let graph = graph_of(
        "coder",
        vec![
            edit("web/src/api.js"),                                       // 1: before the failure
            failing.clone(),                                              // 2
            edit("web/src/session.js"),                                   // 3
            tool("bash", json!({"cmd": "npm test -- --watch"}), "ok", 0), // 4: another command
            tool("read_file", json!({"path": "web/src/session.js"}), "   1  export {}", 0), // 5
            tool("bash", json!({"cmd": "npm test", "cwd": "/repo"}), "ℹ pass 4", 0), // 6
        ],
    );
    let signature = "error:js:TypeError:msUntilRefresh<scheduleRefresh<TestContext.anonymous";
    let fix = edge(&graph, &format!("file:web/src/session.js -fixes-> {signature}"));
    assert_eq!(provenance_seqs(&fix.provenance), vec![3, 6]);
    assert_eq!(fix.recorded_seq, 6);
    assert_eq!(fix.valid_from, Some(at(6)));
    assert!(!edge_ids(&graph).contains(&format!("file:web/src/api.js -fixes-> {signature}")));
    let failure = edge(&graph, &format!("command:npm test -fails_with-> {signature}"));
    assert_eq!((failure.valid_from, failure.valid_to), (Some(at(2)), Some(at(6))));
    assert_eq!(provenance_seqs(&failure.provenance), vec![2, 6]);
}

#[test]
fn a_pass_without_edits_fixes_nothing_and_a_new_failure_reopens() {
    let graph = graph_of(
        "coder",
        vec![
            tool("bash", json!({"cmd": "cargo test"}), CARGO_TEST_PANIC, 101),
            tool("bash", json!({"cmd": "cargo test"}), "test result: ok", 0),
            tool("bash", json!({"cmd": "cargo test"}), CARGO_TEST_PANIC, 101),
        ],
    );
    let edges = edge_ids(&graph);
    assert!(!edges.iter().any(|id| id.contains("-fixes->")), "{edges:?}");
    let signature = "error:rust:assertion_failed:refresh_access_token<refresh_access_token_rotates_refresh_token";
    let first = edge(&graph, &format!("command:cargo test -fails_with-> {signature}"));
    let second = edge(&graph, &format!("command:cargo test -fails_with-> {signature}#2"));
    assert_eq!((first.valid_from, first.valid_to), (Some(at(1)), Some(at(2))));
    assert_eq!((second.valid_from, second.valid_to, second.recorded_seq), (Some(at(3)), None, 3));
}

// -------------------------------------------------- reads, greps, diffs

#[test]
fn a_file_read_gives_reads_and_definitions() {
    let listing = "   1  \"\"\"Thin HTTP client for the auth service.\"\"\"\n   2  \n\
                   3  from authsvc.errors import AuthError, TokenExpiredError\n  13  @dataclass\n  14  class Session:\n\
                   15      access_token: str\n  19  class AuthClient:\n  20      def __init__(self, base_url: str) -> None:\n\
                   25      def login(self, email: str, password: str) -> Session:";
    let graph = graph_of(
        "coder",
        vec![
            tool(
                "read_file",
                json!({"path": "clients/python/authsvc/client.py", "start_line": 1, "end_line": 25}),
                listing,
                0,
            ),
            tool("read_file", json!({"path": "clients/python/authsvc/missing.py"}), "No such file", 1),
        ],
    );
    assert_edges(
        &graph,
        &[
            "agent:coder -reads-> file:clients/python/authsvc/client.py",
            "file:clients/python/authsvc/client.py -defines-> symbol:AuthClient",
            "file:clients/python/authsvc/client.py -defines-> symbol:Session",
            "file:clients/python/authsvc/client.py -defines-> symbol:login",
        ],
    );
    let defined: Vec<String> = graph
        .edges_of("file:clients/python/authsvc/client.py")
        .into_iter()
        .filter(|edge| edge.relation == "defines")
        .map(|edge| edge.to)
        .collect();
    assert_eq!(defined, vec!["symbol:AuthClient", "symbol:Session", "symbol:login"], "__init__ is not recorded");
    // The listing mentions two error types (its definitions are not
    // mentions on top); a failed read reads nothing.
    assert_eq!(item_references(&graph, 1), vec!["error:AuthError", "error:TokenExpiredError"]);
    assert!(graph.node("file:clients/python/authsvc/missing.py").is_none());
}

#[test]
fn grep_hits_reference_the_symbol_searched_for() {
    let output = "clients/python/authsvc/client.py-18-\nclients/python/authsvc/client.py:19:class AuthClient:\n--\n\
                  clients/python/tests/test_client.py:5:from authsvc.client import AuthClient\n\
                  clients/python/tests/test_client.py:16:    client = AuthClient(\"http://auth\", http)";
    let graph = graph_of(
        "coder",
        vec![
            tool("grep", json!({"pattern": "AuthClient", "path": ".", "fixed_strings": true}), output, 0),
            tool("grep", json!({"pattern": "refresh_token = %", "path": "."}), "", 1),
            tool(
                "bash",
                json!({"cmd": "rg -n 'expires_in: 900' src"}),
                "src/routes/session.rs:27:        expires_in: 900,",
                0,
            ),
        ],
    );
    assert_edges(
        &graph,
        &[
            "file:clients/python/authsvc/client.py -references-> symbol:AuthClient",
            "file:clients/python/tests/test_client.py -references-> symbol:AuthClient",
            "file:clients/python/authsvc/client.py -defines-> symbol:AuthClient",
            "agent:coder -runs-> command:rg -n 'expires_in: 900' src",
        ],
    );
    // A pattern that is not a name: the search item references the files.
    assert_eq!(item_references(&graph, 3), vec!["file:src/routes/session.rs"]);
    assert!(item_references(&graph, 2).is_empty());
}

#[test]
fn git_diff_names_modified_files_and_added_definitions() {
    let diff = "diff --git a/clients/python/authsvc/client.py b/clients/python/authsvc/client.py\n\
                index cc3c5d1..46d05d2 100644\n--- a/clients/python/authsvc/client.py\n+++ b/clients/python/authsvc/client.py\n\
                @@ -26,6 +27,18 @@\n-        body = resp.json()\n+    def _session_from(self, body: dict) -> Session:\n\
                +        return Session(body[\"access_token\"])\n+\n+    def refresh(self) -> Session:\n\
                diff --git a/src/auth/refresh.rs b/src/auth/refresh.rs\nnew file mode 100644\n--- /dev/null\n+++ b/src/auth/refresh.rs\n\
                @@ -0,0 +1,3 @@\n+pub struct RefreshStore {\n+    pool: PgPool,\n+}";
    let graph = graph_of(
        "reviewer",
        vec![
            tool("git", json!({"args": ["diff", "main...HEAD"]}), diff, 0),
            tool(
                "git",
                json!({"args": ["diff", "--stat", "main...HEAD"]}),
                " src/config.rs | 3 +\n web/src/session.js | 20 +",
                0,
            ),
        ],
    );
    let first = format!("item:{}", event(1, "x", message("x")).id);
    let second = format!("item:{}", event(2, "x", message("x")).id);
    assert_edges(
        &graph,
        &[
            "agent:reviewer -runs-> command:git diff main...HEAD",
            &format!("{first} -modifies-> file:clients/python/authsvc/client.py"),
            &format!("{first} -modifies-> file:src/auth/refresh.rs"),
            "file:clients/python/authsvc/client.py -defines-> symbol:_session_from",
            "file:clients/python/authsvc/client.py -defines-> symbol:refresh",
            "file:src/auth/refresh.rs -defines-> symbol:RefreshStore",
            &format!("{second} -modifies-> file:src/config.rs"),
            &format!("{second} -modifies-> file:web/src/session.js"),
        ],
    );
    // Reviewing a diff is not editing: no agent modifies anything.
    assert!(!edge_ids(&graph).iter().any(|id| id.starts_with("agent:reviewer -modifies->")));
    assert_eq!(node_ids(&graph, EntityKind::File).len(), 4, "no a/… or b/… files");
}

#[test]
fn edits_and_writes_maintain_definitions() {
    let graph = graph_of(
        "coder",
        vec![
            tool(
                "write_file",
                json!({"path": "src/auth/refresh.rs", "content": "pub struct RefreshStore {}\npub fn new_refresh_token() -> String {}\n"}),
                "Wrote 2 lines",
                0,
            ),
            tool(
                "edit_file",
                json!({"path": "src/auth/refresh.rs", "old_string": "pub fn new_refresh_token() -> String {}", "new_string": "pub fn generate_token() -> String {}"}),
                "The file src/auth/refresh.rs has been edited.",
                0,
            ),
            tool(
                "write_file",
                json!({"path": "src/auth/refresh.rs", "content": "pub struct RefreshStore { used: bool }\n"}),
                "Wrote 1 lines",
                0,
            ),
        ],
    );
    let defines = |symbol: &str| edge(&graph, &format!("file:src/auth/refresh.rs -defines-> symbol:{symbol}"));
    assert_eq!(defines("RefreshStore").valid_to, None);
    assert_eq!(
        (defines("new_refresh_token").valid_from, defines("new_refresh_token").valid_to),
        (Some(at(1)), Some(at(2)))
    );
    assert_eq!((defines("generate_token").valid_from, defines("generate_token").valid_to), (Some(at(2)), Some(at(3))));
    assert_eq!(
        provenance_seqs(&edge(&graph, "agent:coder -modifies-> file:src/auth/refresh.rs").provenance),
        vec![1, 2, 3]
    );
}

#[test]
fn tools_are_recognised_generically() {
    let patch = "*** Begin Patch\n*** Update File: src/lib.rs\n@@\n-pub mod old;\n+pub mod auth;\n+pub fn router() {}\n*** End Patch";
    let graph = graph_of(
        "coder",
        vec![
            tool(
                "mcp__filesystem__read_file",
                json!({"file_path": "/repo/src/main.rs", "cwd": "/repo"}),
                "fn main() {}",
                0,
            ),
            tool("str_replace_based_edit_tool", json!({"command": "view", "path": "docs/auth.md"}), "# Auth", 0),
            tool(
                "str_replace_based_edit_tool",
                json!({"command": "create", "path": "src/config.rs", "file_text": "pub struct AuthConfig;"}),
                "ok",
                0,
            ),
            tool("apply_patch", json!({"input": patch}), "Done!", 0),
            tool("functions.shell", json!({"command": ["cat", "Cargo.toml"]}), "[package]", 0),
            tool("terminal", json!({"command": "  make   test  "}), "ok", 0),
        ],
    );
    assert_edges(
        &graph,
        &[
            "agent:coder -reads-> file:src/main.rs",
            "agent:coder -reads-> file:docs/auth.md",
            "agent:coder -modifies-> file:src/config.rs",
            "file:src/config.rs -defines-> symbol:AuthConfig",
            "agent:coder -modifies-> file:src/lib.rs",
            "file:src/lib.rs -defines-> symbol:router",
            "agent:coder -runs-> command:cat Cargo.toml",
            "agent:coder -reads-> file:Cargo.toml",
            "agent:coder -runs-> command:make test",
            "agent:coder -uses-> tool:mcp__filesystem__read_file",
        ],
    );
}

// ---------------------------------------------------------------- mentions

#[test]
fn messages_mention_paths_identifiers_errors_and_known_names() {
    let graph = graph_of(
        "reviewer",
        vec![
            tool("bash", json!({"cmd": "cargo test"}), "ok", 0),
            EventKind::PreferenceSet(mneme_events::PreferenceSet {
                key: "logging.secrets".to_string(),
                value: "never log tokens".to_string(),
            }),
            message(
                "Blocking: src/routes/session.rs:48 logs the raw refresh token (tracing::info!(refresh_token = ...)). \
                 That breaks our logging.secrets convention; `cargo test` passes anyway. coder: TokenIssuer::verify \
                 raises TokenExpiredError, see `claims` and take() in refresh.rs. Ignore v0.4.2, e.g. Node.js, \
                 https://github.com/acme/auth-service/blob/main/src/lib.rs and rt_4q9Xc2W0mZbH7tKp1sVd8eYf.",
            ),
        ],
    );
    assert_eq!(
        item_references(&graph, 3),
        vec![
            "command:cargo test",
            "error:TokenExpiredError",
            "file:refresh.rs",
            "file:src/routes/session.rs",
            "preference:logging.secrets",
            "symbol:TokenIssuer",
            "symbol:TokenIssuer::verify",
            "symbol:claims",
            "symbol:refresh_token",
            "symbol:take",
            "symbol:tracing::info",
        ]
    );
}

#[test]
fn a_bare_file_name_resolves_to_the_one_known_file() {
    let graph = graph_of(
        "coder",
        vec![
            tool("read_file", json!({"path": "src/auth/token.rs"}), "pub struct TokenIssuer;", 0),
            message("switch token.rs to the new store; also touch lib.rs"),
        ],
    );
    assert_eq!(item_references(&graph, 2), vec!["file:lib.rs", "file:src/auth/token.rs"]);
}

#[test]
fn handoffs_link_agents_tasks_artifacts_and_decisions() {
    let decision = event(1, "planner", message("x")).id;
    let graph = graph_of(
        "planner",
        vec![
            EventKind::DecisionMade(mneme_events::DecisionMade {
                title: "Refresh token storage".to_string(),
                choice: "Postgres".to_string(),
                rationale: String::new(),
                supersedes: None,
            }),
            EventKind::HandoffSent(HandoffSent {
                to: "coder".to_string(),
                task: "task-214-rust-refresh".to_string(),
                summary: "Implement refresh_access_token in src/auth/token.rs".to_string(),
                artifacts: vec!["src/auth/token.rs".to_string(), "PR #231".to_string()],
                decisions: vec![decision.to_string()],
                constraints: vec!["no unwrap() outside tests".to_string()],
            }),
        ],
    );
    let item = format!("item:{}", event(2, "x", message("x")).id);
    assert_edges(
        &graph,
        &[
            "agent:planner -handed_off_to-> agent:coder",
            &format!("agent:planner -decided-> decision:{decision}"),
            "task:task-214-rust-refresh -references-> file:src/auth/token.rs",
            &format!("{item} -references-> task:task-214-rust-refresh"),
            &format!("{item} -references-> decision:{decision}"),
            &format!("{item} -references-> symbol:refresh_access_token"),
            &format!("{item} -references-> symbol:unwrap"),
        ],
    );
}

// ------------------------------------------------- the example trajectory

#[test]
fn trajectory_failures_and_their_fixes() {
    let graph = trajectory_graph();
    let panic = "error:rust:assertion_failed:refresh_access_token_rotates_refresh_token";
    let failure = edge(&graph, &format!("command:cargo test -fails_with-> {panic}"));
    // Line 157 fails (`RUST_BACKTRACE=1 cargo test`); line 174 passes.
    assert_eq!(failure.recorded_seq, 157);
    assert_eq!(provenance_seqs(&failure.provenance), vec![157, 174]);
    assert!(failure.valid_to.is_some());
    let fix = edge(&graph, &format!("file:src/auth/token.rs -fixes-> {panic}"));
    assert_eq!(provenance_seqs(&fix.provenance), vec![160, 174]);
    assert_edges(
        &graph,
        &[
            "file:src/auth/mod.rs -fixes-> error:rustc:E0432:token.rs",
            "file:src/auth/middleware.rs -fixes-> error:rustc:E0004:middleware.rs",
            "file:clients/python/tests/test_client.py -fixes-> error:python:KeyError:_session_from<refresh<get",
            "file:web/src/session.js -fixes-> error:js:TypeError:msUntilRefresh<scheduleRefresh<TestContext.anonymous",
            "file:src/auth/refresh.rs -fixes-> error:rust:assertion_failed:reuse_revokes_newer_token_in_family",
        ],
    );
    let failing_commands: BTreeSet<String> =
        graph.edges().into_iter().filter(|edge| edge.relation == "fails_with").map(|edge| edge.from).collect();
    assert_eq!(
        failing_commands.into_iter().collect::<Vec<_>>(),
        vec![
            "command:cargo check --all-targets",
            "command:cargo test",
            "command:gh pr checks 231 --watch",
            "command:npm test",
            "command:pytest --tb=native"
        ]
    );
}

#[test]
fn trajectory_files_are_exactly_the_repository_files() {
    let graph = trajectory_graph();
    let files = node_ids(&graph, EntityKind::File);
    let expected = [
        ".sqlx/query-3b1f0e9c4d2a7b8e6f5a4c3d2e1f0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f.json",
        ".sqlx/query-9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c8b7a6f5e4d3c2b1a0f9e8d.json",
        "Cargo.lock",
        "Cargo.toml",
        "clients/python/authsvc/__init__.py",
        "clients/python/authsvc/client.py",
        "clients/python/authsvc/errors.py",
        "clients/python/pyproject.toml",
        "clients/python/tests/fakes.py",
        "clients/python/tests/test_client.py",
        "docs/auth.md",
        "migrations/0006_sessions.sql",
        "migrations/0007_refresh_tokens.sql",
        "migrations/0008_refresh_tokens_used_at.sql",
        "scripts/repro-214.sh",
        "src/auth/middleware.rs",
        "src/auth/mod.rs",
        "src/auth/refresh.rs",
        "src/auth/token.rs",
        "src/config.rs",
        "src/lib.rs",
        "src/main.rs",
        "src/routes/me.rs",
        "src/routes/mod.rs",
        "src/routes/session.rs",
        "src/store.rs",
        "web/package.json",
        "web/src/api.js",
        "web/src/session.js",
        "web/test/helpers.js",
        "web/test/session.test.js",
    ];
    assert_eq!(files, expected.iter().map(|path| format!("file:{path}")).collect::<Vec<_>>());
}

#[test]
fn trajectory_token_rs_is_read_modified_and_defines_refresh_access_token() {
    let graph = trajectory_graph();
    let token = graph.node("file:src/auth/token.rs").expect("token.rs");
    assert_eq!(token.name, "src/auth/token.rs");
    assert_edges(
        &graph,
        &[
            "agent:coder -reads-> file:src/auth/token.rs",
            "agent:reviewer -reads-> file:src/auth/token.rs",
            "agent:coder -modifies-> file:src/auth/token.rs",
            "file:src/auth/token.rs -defines-> symbol:refresh_access_token",
            "file:src/auth/token.rs -defines-> error:TokenExpiredError",
            "file:clients/python/authsvc/errors.py -defines-> error:TokenExpiredError",
            "task:task-214-rust-refresh -references-> file:src/auth/token.rs",
            "agent:planner -handed_off_to-> agent:coder",
            "agent:coder -handed_off_to-> agent:reviewer",
        ],
    );
    let reads = edge(&graph, "agent:coder -reads-> file:src/auth/token.rs");
    assert_eq!(reads.recorded_seq, 33, "first read on line 33");
    assert_eq!(provenance_seqs(&reads.provenance), vec![33, 34, 35, 36, 37, 126, 131, 137, 141, 159]);
    let items = graph.items_of("file:src/auth/token.rs");
    assert!(items.contains(&33) && items.contains(&160) && items.contains(&16), "{items:?}");
}

#[test]
fn trajectory_queries() {
    let graph = trajectory_graph();
    assert_eq!(
        graph.entities_in_text("why does `cargo test` fail in src/auth/token.rs with TokenExpiredError for coder?"),
        vec!["agent:coder", "command:cargo test", "error:TokenExpiredError", "file:src/auth/token.rs"]
    );
    let around = graph.neighbourhood(&GraphQuery::new("TokenExpiredError", 1)).expect("known");
    assert_eq!(around.center, "error:TokenExpiredError");
    assert!(
        around
            .edges
            .iter()
            .any(|edge| edge.id == "file:clients/python/authsvc/errors.py -defines-> error:TokenExpiredError")
    );
    let near = graph.items_near(&["file:src/auth/token.rs".to_string()], 1, None);
    let (best_seq, best_score) = near[0];
    assert_eq!(best_score, near.iter().map(|(_, score)| *score).fold(0.0, f32::max));
    assert!(graph.items_of("file:src/auth/token.rs").contains(&best_seq));
}

// ---------------------------------------------------------- robustness

mod arbitrary_text {
    use proptest::prelude::*;

    use super::*;

    /// Text made of the characters the recognisers care about.
    fn text() -> impl Strategy<Value = String> {
        "([a-zA-Z_]{1,12}|[0-9]{1,4}|[ /._:;,()\\[\\]{}<>`'\"#@=|&*+\n\t-]|::|\\.\\./|file:///|Error|Traceback \\(most recent call last\\):\n|  File \"x.py\", line 1, in f\n|thread 'a' panicked at |error\\[E0432\\]: |\n --> |goroutine 1 \\[running\\]:\n|panic: |    at |diff --git a/|\\+\\+\\+ b/|--- FAIL: |_{3,6} |é|😀){0,80}"
    }

    fn kind() -> impl Strategy<Value = EventKind> {
        prop_oneof![
            text().prop_map(|text| message(&text)),
            (prop::sample::select(vec!["bash", "read_file", "edit_file", "grep", "git", "apply_patch", "mystery"]), text(), text(), -2..3i32)
                .prop_map(|(name, argument, output, exit_code)| {
                    let args = json!({"cmd": argument, "path": argument, "pattern": argument, "args": [argument], "new_string": output, "input": argument, "cwd": "/repo"});
                    tool(name, args, &output, exit_code)
                }),
            (text(), text(), text()).prop_map(|(subject, predicate, object)| {
                EventKind::FactAsserted(mneme_events::FactAsserted {
                    subject: format!("s{subject}"),
                    predicate: format!("p{predicate}"),
                    object: format!("o{object}"),
                    confidence: 0.5,
                    valid_from: None,
                    valid_to: None,
                })
            }),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

        #[test]
        fn any_text_is_applied_and_survives_a_snapshot(kinds in prop::collection::vec(kind(), 1..12), cut in 0usize..12) {
            let events: Vec<Event> = kinds.into_iter().enumerate().map(|(index, kind)| event(index as u64 + 1, "coder", kind)).collect();
            let mut live = FactGraph::new();
            let mut head = FactGraph::new();
            let cut = cut.min(events.len());
            for (index, event) in events.iter().enumerate() {
                live.apply(index as u64 + 1, event);
                if index < cut {
                    head.apply(index as u64 + 1, event);
                }
            }
            let mut restored = FactGraph::from_snapshot(&head.to_snapshot().unwrap()).unwrap();
            for (index, event) in events.iter().enumerate().skip(cut) {
                restored.apply(index as u64 + 1, event);
            }
            prop_assert_eq!(restored.digest(), live.digest());
            for node in live.nodes() {
                prop_assert!(live.neighbourhood(&GraphQuery::new(node.id.clone(), 2)).is_some());
                live.entities_in_text(&node.name);
            }
        }
    }
}
