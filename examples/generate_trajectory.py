#!/usr/bin/env python3
"""Generates examples/trajectory.jsonl: a deterministic multi-agent trajectory.

Swarm "demo", agents planner, coder and reviewer, adding JWT token refresh to
an auth service in a Rust + Python repo (with a small Node.js web client).
Python 3.11 standard library only; running it twice gives identical bytes.

    python3 examples/generate_trajectory.py            # writes examples/trajectory.jsonl
    python3 examples/generate_trajectory.py -o out.jsonl
"""

import argparse
import difflib
import hashlib
import json
import random
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path

SEED = 20260106
START = datetime(2026, 1, 6, 9, 0, 0, tzinfo=timezone.utc)
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
SWARM = "demo"
CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def encode_ulid(ms: int, rand80: int) -> str:
    """48-bit milliseconds + 80 random bits, as 26 Crockford base32 chars."""
    value = (ms << 80) | rand80
    return "".join(CROCKFORD[(value >> (5 * (25 - i))) & 31] for i in range(26))


def rfc3339(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


class Trajectory:
    """Collects events; time moves forward a few seconds per event."""

    def __init__(self) -> None:
        self.rng = random.Random(SEED)
        self.now = START
        self.counter = 0
        self.lines: list[str] = []
        self.task = None  # current correlation id

    def next_id(self) -> str:
        ms = (self.now - EPOCH) // timedelta(milliseconds=1)
        self.counter += 1
        rand80 = (self.rng.getrandbits(64) << 16) | (self.counter & 0xFFFF)
        return encode_ulid(ms, rand80)

    def emit(self, agent, kind, data, scope="shared", importance=None,
             cause=None, corr="task", advance_ms=0) -> str:
        step = self.rng.randint(2000, 7999) + advance_ms
        self.now += timedelta(milliseconds=step)
        event_id = self.next_id()
        event = {"id": event_id, "swarm": SWARM, "agent": agent,
                 "ts": rfc3339(self.now), "kind": kind, "data": data}
        corr = self.task if corr == "task" else corr
        if corr:
            event["correlation_id"] = corr
        if cause:
            event["causation_id"] = cause
        event["scope"] = scope
        if importance is not None:
            event["importance"] = importance
        event["schema_version"] = 1
        self.lines.append(json.dumps(event, ensure_ascii=False, separators=(",", ":")))
        return event_id

    # Convenience wrappers, one per kind used.
    def say(self, agent, text, role=None, scope="shared", **kw) -> str:
        return self.emit(agent, "message_recorded", {"role": role or agent, "text": text}, scope, **kw)

    def note(self, agent, text, **kw) -> str:
        return self.say(agent, text, role="scratchpad", scope="private", **kw)

    def tool(self, agent, tool, args, output, exit_code=0, duration_ms=None, **kw) -> str:
        if duration_ms is None:
            duration_ms = self.rng.randint(40, 900)
        data = {"tool": tool, "args": args, "output": output,
                "exit_code": exit_code, "duration_ms": duration_ms}
        return self.emit(agent, "tool_result_recorded", data, "shared", advance_ms=duration_ms, **kw)

    def decide(self, agent, title, choice, rationale, importance, supersedes=None, **kw) -> str:
        data = {"title": title, "choice": choice, "rationale": rationale}
        if supersedes:
            data["supersedes"] = supersedes
        return self.emit(agent, "decision_made", data, "shared", importance, **kw)

    def fact(self, agent, s, p, o, confidence=1.0, valid_from=None, importance=0.6, **kw) -> str:
        data = {"subject": s, "predicate": p, "object": o, "confidence": confidence}
        if valid_from:
            data["valid_from"] = valid_from
        return self.emit(agent, "fact_asserted", data, "shared", importance, **kw)

    def task_update(self, agent, task_id, status, title=None, note=None, **kw) -> str:
        data = {"task_id": task_id, "status": status}
        if title:
            data["title"] = title
        if note:
            data["note"] = note
        return self.emit(agent, "task_updated", data, "shared", corr=task_id, **kw)


# ---------------------------------------------------------------------------
# The repository the agents work on, held in memory so that reads, greps and
# diffs agree with the edits made along the way.
# ---------------------------------------------------------------------------

class Repo:
    def __init__(self, files: dict[str, str]) -> None:
        self.base = dict(files)
        self.files = dict(files)

    def read(self, path, start=1, end=None) -> str:
        lines = self.files[path].splitlines()
        end = min(end or len(lines), len(lines))
        return "\n".join(f"{n:>4}  {lines[n - 1]}" for n in range(start, end + 1))

    def edit(self, path, old, new) -> str:
        text = self.files[path]
        assert text.count(old) == 1, (path, old)
        self.files[path] = text.replace(old, new)
        first = text[:text.index(old)].count("\n") + 1
        last = first + max(len(new.splitlines()), 1) - 1
        return (f"The file {path} has been edited. Here is the result of running `cat -n` on a snippet of it:\n"
                + self.read(path, max(1, first - 3), min(last + 3, first + 40)))

    def grep(self, pattern, prefix="", context=2) -> str:
        """grep -rn -C context: hits as path:n:line, context as path-n-line, groups split by --."""
        out = []
        for path, text in sorted(self.files.items()):
            lines = text.splitlines()
            hits = [n for n, line in enumerate(lines) if pattern in line] if path.startswith(prefix) else []
            shown = sorted({m for n in hits for m in range(max(0, n - context), min(len(lines), n + context + 1))})
            for i, m in enumerate(shown):
                if out and (i == 0 or m != shown[i - 1] + 1):
                    out.append("--")
                out.append(f"{path}{':' if m in hits else '-'}{m + 1}{':' if m in hits else '-'}{lines[m]}")
        return "\n".join(out[:60])

    def diff(self, paths=None, base=None) -> str:
        out, base = [], base or self.base
        for path in sorted(paths or self.files):
            before, after = base.get(path, ""), self.files[path]
            if before == after:
                continue
            blob = lambda text: hashlib.sha1(text.encode()).hexdigest()[:7]
            out.append(f"diff --git a/{path} b/{path}")
            out.append(f"index {blob(before)}..{blob(after)} 100644")
            out.extend(difflib.unified_diff(before.splitlines(), after.splitlines(),
                                            f"a/{path}", f"b/{path}", lineterm=""))
        return "\n".join(out)


# Starting contents of the files the agents touch.

TOKEN_RS = '''\
//! Issuing and verifying JWT access tokens.

use jsonwebtoken::{decode, encode, Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::config::AuthConfig;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Claims {
    pub sub: String,
    pub exp: i64,
    pub iat: i64,
    pub sid: String,
}

#[derive(Debug, thiserror::Error)]
#[error("token expired at {exp} (now {now})")]
pub struct TokenExpiredError {
    pub exp: i64,
    pub now: i64,
}

#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error(transparent)]
    Expired(#[from] TokenExpiredError),
    #[error("invalid token: {0}")]
    Invalid(#[from] jsonwebtoken::errors::Error),
}

pub struct TokenIssuer {
    encoding: EncodingKey,
    decoding: DecodingKey,
    access_ttl_secs: i64,
}

impl TokenIssuer {
    pub fn new(config: &AuthConfig) -> Self {
        TokenIssuer {
            encoding: EncodingKey::from_secret(config.jwt_secret.as_bytes()),
            decoding: DecodingKey::from_secret(config.jwt_secret.as_bytes()),
            access_ttl_secs: config.access_ttl_secs,
        }
    }

    pub fn issue_access_token(&self, sub: &str, sid: &str) -> Result<String, TokenError> {
        let now = OffsetDateTime::now_utc().unix_timestamp();
        let claims = Claims { sub: sub.to_owned(), exp: now + self.access_ttl_secs, iat: now, sid: sid.to_owned() };
        Ok(encode(&Header::new(Algorithm::HS256), &claims, &self.encoding)?)
    }

    pub fn verify(&self, token: &str) -> Result<Claims, TokenError> {
        let mut validation = Validation::new(Algorithm::HS256);
        validation.validate_exp = false;
        let claims = decode::<Claims>(token, &self.decoding, &validation)?.claims;
        let now = OffsetDateTime::now_utc().unix_timestamp();
        if claims.exp <= now {
            return Err(TokenExpiredError { exp: claims.exp, now }.into());
        }
        Ok(claims)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn issuer(ttl: i64) -> TokenIssuer {
        TokenIssuer::new(&AuthConfig { jwt_secret: "test-secret".into(), access_ttl_secs: ttl, ..AuthConfig::default() })
    }

    #[test]
    fn issued_token_verifies() {
        let issuer = issuer(900);
        let token = issuer.issue_access_token("user-42", "sid-1").unwrap();
        assert_eq!(issuer.verify(&token).unwrap().sub, "user-42");
    }

    #[test]
    fn expired_token_is_rejected() {
        let issuer = issuer(-5);
        let token = issuer.issue_access_token("user-42", "sid-1").unwrap();
        assert!(matches!(issuer.verify(&token), Err(TokenError::Expired(_))));
    }
}
'''

MIDDLEWARE_RS = '''\
//! Extracts and verifies the bearer token on every authenticated route.

use actix_web::{dev::ServiceRequest, error::ErrorUnauthorized, Error, HttpMessage};

use crate::auth::token::{TokenError, TokenIssuer};

pub async fn require_auth(req: ServiceRequest, issuer: &TokenIssuer) -> Result<ServiceRequest, Error> {
    let header = req
        .headers()
        .get("Authorization")
        .and_then(|value| value.to_str().ok())
        .ok_or_else(|| ErrorUnauthorized("missing Authorization header"))?;
    let token = header.strip_prefix("Bearer ").ok_or_else(|| ErrorUnauthorized("expected a bearer token"))?;
    match issuer.verify(token) {
        Ok(claims) => {
            req.extensions_mut().insert(claims);
            Ok(req)
        }
        Err(TokenError::Expired(err)) => {
            tracing::info!(exp = err.exp, "access token expired; session ends");
            Err(ErrorUnauthorized("session expired, please sign in again"))
        }
        Err(TokenError::Invalid(err)) => Err(ErrorUnauthorized(err.to_string())),
    }
}
'''

CONFIG_RS = '''\
//! Service configuration, read from the environment at start-up.

#[derive(Debug, Clone)]
pub struct AuthConfig {
    pub jwt_secret: String,
    /// Lifetime of an access token. 900 s = 15 minutes.
    pub access_ttl_secs: i64,
    pub database_url: String,
}

impl Default for AuthConfig {
    fn default() -> Self {
        AuthConfig {
            jwt_secret: String::new(),
            access_ttl_secs: 900,
            database_url: "postgres://auth@localhost/auth".into(),
        }
    }
}
'''

SESSION_RS = '''\
//! POST /v1/session: sign in with a password, receive an access token.

use actix_web::{post, web, HttpResponse};
use serde::{Deserialize, Serialize};

use crate::auth::token::TokenIssuer;
use crate::store::UserStore;

#[derive(Deserialize)]
pub struct LoginRequest {
    pub email: String,
    pub password: String,
}

#[derive(Serialize)]
pub struct LoginResponse {
    pub access_token: String,
    pub token_type: &'static str,
    pub expires_in: i64,
}

#[post("/v1/session")]
pub async fn login(
    body: web::Json<LoginRequest>,
    users: web::Data<UserStore>,
    issuer: web::Data<TokenIssuer>,
) -> actix_web::Result<HttpResponse> {
    let user = users.check_password(&body.email, &body.password).await?;
    let sid = ulid::Ulid::new().to_string();
    let access_token = issuer.issue_access_token(&user.id, &sid)?;
    Ok(HttpResponse::Ok().json(LoginResponse { access_token, token_type: "Bearer", expires_in: 900 }))
}
'''

CLIENT_PY = '''\
"""Thin HTTP client for the auth service, used by the CLI and the workers."""

from __future__ import annotations

import time
from dataclasses import dataclass

import requests

from authsvc.errors import AuthError, TokenExpiredError


@dataclass
class Session:
    access_token: str
    expires_at: float


class AuthClient:
    def __init__(self, base_url: str, http: requests.Session | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self.http = http or requests.Session()
        self.session: Session | None = None

    def login(self, email: str, password: str) -> Session:
        resp = self.http.post(f"{self.base_url}/v1/session", json={"email": email, "password": password})
        if resp.status_code != 200:
            raise AuthError(resp.status_code, resp.text)
        body = resp.json()
        self.session = Session(body["access_token"], time.time() + body["expires_in"])
        return self.session

    def get(self, path: str) -> dict:
        if self.session is None:
            raise AuthError(401, "not signed in")
        if time.time() >= self.session.expires_at:
            raise TokenExpiredError(self.session.expires_at)
        headers = {"Authorization": f"Bearer {self.session.access_token}"}
        resp = self.http.get(f"{self.base_url}{path}", headers=headers)
        if resp.status_code == 401:
            raise TokenExpiredError(self.session.expires_at)
        return resp.json()
'''

ERRORS_PY = '''\
class AuthError(Exception):
    def __init__(self, status: int, detail: str) -> None:
        super().__init__(f"auth service returned {status}: {detail}")
        self.status = status


class TokenExpiredError(AuthError):
    def __init__(self, expired_at: float) -> None:
        super().__init__(401, f"access token expired at {expired_at:.0f}")
        self.expired_at = expired_at
'''

TEST_CLIENT_PY = '''\
import time

import pytest

from authsvc.client import AuthClient
from authsvc.errors import TokenExpiredError
from tests.fakes import FakeHttp


def login_body(expires_in=900):
    return {"access_token": "at-1", "token_type": "Bearer", "expires_in": expires_in}


def test_login_stores_session():
    http = FakeHttp(post={"/v1/session": (200, login_body())})
    client = AuthClient("http://auth", http)
    session = client.login("ada@example.com", "pw")
    assert session.access_token == "at-1"


def test_expired_session_raises():
    http = FakeHttp(post={"/v1/session": (200, login_body(expires_in=-1))})
    client = AuthClient("http://auth", http)
    client.login("ada@example.com", "pw")
    with pytest.raises(TokenExpiredError):
        client.get("/v1/me")
'''

SESSION_JS = '''\
// Browser-side session handling for the dashboard.
import { api } from "./api.js";

const STORAGE_KEY = "auth.session";

export function decodeExpiry(token) {
  const [, payload] = token.split(".");
  const claims = JSON.parse(atob(payload.replace(/-/g, "+").replace(/_/g, "/")));
  return claims.exp * 1000;
}

export function loadSession(storage = window.localStorage) {
  const raw = storage.getItem(STORAGE_KEY);
  return raw ? JSON.parse(raw) : null;
}

export async function signIn(email, password, storage = window.localStorage) {
  const body = await api.post("/v1/session", { email, password });
  const session = { accessToken: body.access_token, expiresAt: decodeExpiry(body.access_token) };
  storage.setItem(STORAGE_KEY, JSON.stringify(session));
  return session;
}

export function isExpired(session, now = Date.now()) {
  return !session || now >= session.expiresAt;
}
'''

SESSION_TEST_JS = '''\
import { test } from "node:test";
import assert from "node:assert/strict";
import { decodeExpiry, isExpired } from "../src/session.js";
import { fakeToken } from "./helpers.js";

test("decodeExpiry reads exp in milliseconds", () => {
  assert.equal(decodeExpiry(fakeToken({ exp: 1767690000 })), 1767690000000);
});

test("isExpired treats a missing session as expired", () => {
  assert.equal(isExpired(null), true);
});
'''

AUTH_MD = '''\
# Authentication

Clients sign in with `POST /v1/session` and receive a JWT access token
(HS256, `exp` = issue time + `access_ttl_secs`, default 900 seconds).
Every authenticated route checks the token in `require_auth`
(`src/auth/middleware.rs`). When the token expires the client must sign in
again; there is no refresh flow yet (see issue #214).
'''

SOURCES = {
    "src/auth/token.rs": TOKEN_RS,
    "src/auth/middleware.rs": MIDDLEWARE_RS,
    "src/auth/mod.rs": "//! Authentication: tokens and the middleware that checks them.\n\npub mod middleware;\npub mod token;\n",
    "src/config.rs": CONFIG_RS,
    "src/routes/session.rs": SESSION_RS,
    "clients/python/authsvc/client.py": CLIENT_PY,
    "clients/python/authsvc/errors.py": ERRORS_PY,
    "clients/python/tests/test_client.py": TEST_CLIENT_PY,
    "web/src/session.js": SESSION_JS,
    "web/test/session.test.js": SESSION_TEST_JS,
    "docs/auth.md": AUTH_MD,
}

# ---------------------------------------------------------------------------
# The story.
# ---------------------------------------------------------------------------

TASKS = {
    "task-214-investigate": "Find out how and why sessions end after 15 minutes",
    "task-214-rust-refresh": "Add refresh tokens and POST /v1/token/refresh to the Rust service",
    "task-214-python-client": "Teach the Python client to refresh transparently",
    "task-214-web-client": "Refresh the dashboard session before the access token expires",
    "task-214-review": "Review the refresh-token change end to end",
}
PREFERENCES = [
    ("rust.errors", "thiserror enums per module; no unwrap() or expect() outside tests"),
    ("rust.format", "cargo fmt with max_width = 120; cargo clippy -- -D warnings must pass"),
    ("python.style", "ruff + black, line length 110, type hints on every public function"),
    ("tests.regressions", "every bug fix lands with a regression test that failed before the fix"),
    ("commits", "conventional commits, one logical change per commit, reference the issue (#214)"),
    ("logging.secrets", "never log tokens, not even truncated; log the session id (sid) instead"),
]
GIT_LOG = """\
9c41e7a (HEAD -> main, origin/main) chore(deps): bump jsonwebtoken from 9.2.0 to 9.3.0
5d0b8f2 fix(web): show the sign-in page on 401 instead of a blank dashboard
e83a1c4 feat(auth): add sid claim to access tokens (#201)
77f20d9 test(python): fake HTTP session for client tests
1b9e3aa refactor(auth): move token code into src/auth/token.rs
c02f6d1 feat(auth): configurable access_ttl_secs, default 900
a4e9b70 docs: describe the session endpoint
3f7d215 ci: run pytest and node --test on every push
0e6c8b9 feat(web): persist the session in localStorage
d91a4f0 feat(auth): initial JWT sign-in (#12)"""
EXTRA_FILES = ["Cargo.toml", "Cargo.lock", "src/main.rs", "src/lib.rs", "src/store.rs",
               "src/routes/mod.rs", "src/routes/me.rs", "migrations/0006_sessions.sql",
               "clients/python/pyproject.toml", "clients/python/authsvc/__init__.py",
               "clients/python/tests/fakes.py", "web/package.json", "web/src/api.js", "web/test/helpers.js"]


PY_TESTS = ["test_login_stores_session", "test_expired_session_raises", "test_get_refreshes_expired_session",
            "test_refresh_failure_raises_token_expired"]
JS_TESTS = ["decodeExpiry reads exp in milliseconds", "isExpired treats a missing session as expired",
            "scheduleRefresh fires one minute before expiry", "refreshSession stores the rotated token"]
REPRO_214 = """\
POST /v1/session               -> 200 {"token_type":"Bearer","expires_in":900,"access_token":"<redacted>"}
GET  /v1/me        (t+0s)      -> 200 {"id":"user-42","email":"ada@example.com"}
GET  /v1/me        (t+300s)    -> 200
GET  /v1/me        (t+600s)    -> 200
GET  /v1/me        (t+899s)    -> 200
GET  /v1/me        (t+901s)    -> 401 {"error":"session expired, please sign in again"}
server: INFO auth_service::auth::middleware: access token expired; session ends exp=1767690912
repro-214: session ended after 901 s of continuous activity"""
REPRO_FIXED = "\n".join(
    ["POST /v1/session               -> 200 {\"token_type\":\"Bearer\",\"expires_in\":600,\"access_token\":\"<redacted>\","
     "\"refresh_token\":\"<redacted>\"}"] +
    [f"GET  /v1/me        (t+{m * 60}s){' ' * (6 - len(str(m * 60)))}-> 200" + (
        f"   (refreshed at t+{m * 60 - 60}s, rotated)" if m % 9 == 0 else "") for m in range(0, 61, 6)] +
    ["repro-214: session alive after 3600 s; 6 refreshes, 0 sign-ins"])
REVIEW_QA = [
    ("Why does refresh_access_token take() the old token before issuing the new access token? If issuing fails the "
     "user loses the refresh token.", "issue_access_token only fails if the HS256 key is unusable, which would break "
     "sign-in too; keeping take() first is what makes a token single-use under concurrent requests."),
    ("Two dashboard tabs refreshing at the same moment: one wins, the other gets 401 and signs the user out?",
     "The tab that loses retries with the token the winner stored in localStorage; refreshSession re-reads storage "
     "on a 401 before giving up. Covered manually, not by a test yet."),
    ("Is expires_in in the refresh response seconds or milliseconds?", "Seconds, same as login; TokenPair.expires_in "
     "is access_ttl_secs. The dashboard ignores it and reads exp from the token."),
    ("What happens to refresh tokens when a user is deleted?", "ON DELETE CASCADE on refresh_tokens.sub, see "
     "migration 0007."),
    ("Should the Python client refresh proactively like the dashboard?", "No, per the lazy-refresh decision: CLI "
     "commands are short-lived and workers already retry on 401."),
    ("Are refresh tokens compared in constant time?", "They are never compared in application code: the lookup is "
     "by sha256 in the primary key index, so there is no early-exit string comparison to time."),
    ("Where do expired rows in refresh_tokens go?", "Nowhere yet; take() ignores them. I'd add a nightly "
     "DELETE ... WHERE expires_at < now() - interval '1 day' as a separate issue."),
    ("Does anything still hard-code 900?", "Only the old Python test fixture (expires_in=900 is just test data); the "
     "login route now uses pair.expires_in."),
]
CURL_CHECKS = [
    ("curl -s -X POST localhost:8080/v1/session -d '{\"email\":\"ada@example.com\",\"password\":\"pw\"}'",
     '{"access_token":"eyJhbGciOiJIUzI1NiJ9.<snip>","refresh_token":"rt_N2f4...","token_type":"Bearer",'
     '"expires_in":900}', 0),
    ("curl -s -X POST localhost:8080/v1/token/refresh -d '{\"refresh_token\":\"rt_N2f4...\"}'",
     '{"access_token":"eyJhbGciOiJIUzI1NiJ9.<snip>","refresh_token":"rt_Qm8c...","expires_in":900}', 0),
    ("curl -s -o /dev/stdout -w '\\nHTTP %{http_code}\\n' -X POST localhost:8080/v1/token/refresh "
     "-d '{\"refresh_token\":\"rt_N2f4...\"}'", '{"error":"unknown, expired or already used refresh token"}\nHTTP 401',
     0),
    ("psql $DATABASE_URL -c 'select encode(token_sha256, '\"'\"'hex'\"'\"') as h, sid, expires_at from refresh_tokens'",
     "                                h                                 |            sid             |"
     "          expires_at\n------------------------------------------------------------------+"
     "----------------------------+-------------------------------\n 5be1c0a94f27d3e8b6a1f09c7d2e4b3a8c6f1e0d9b7a5c3e"
     "2f1d0b9a8c7e6f5d | 01KE9C7G4TQ2M8X0V5H3N6B1JD | 2026-01-20 10:32:51.214+00\n(1 row)", 0),
]
ISSUE_214 = """title:	Session ends after 15 minutes while using the dashboard
state:	OPEN
author:	support-bot
labels:	bug, auth, customer-reported
comments:	3
--
Several customers (tickets 8812, 8830, 8851) report being sent back to the sign-in page
in the middle of editing a report. It always happens about 15 minutes after signing in,
whether or not they were active. Unsaved form data is lost.

Expected: an active user stays signed in.
--
priya (maintainer): access tokens are 15 minutes and we never renew them. We need refresh tokens."""
REFRESH_TEST = '''
    #[tokio::test]
    async fn {name}() {{
        let (issuer, store) = (issuer({ttl}), RefreshStore::for_tests().await);
        let login = issuer.issue_pair(&store, "user-42", "sid-1").await.unwrap();
{body}
    }}
'''
REFRESH_TESTS = "".join(REFRESH_TEST.format(name=name, ttl=ttl, body=body) for name, ttl, body in [
    ("refresh_access_token_issues_new_pair", 900,
     "        let pair = issuer.refresh_access_token(&store, &login.refresh_token).await.unwrap();\n"
     '        assert_eq!(issuer.verify(&pair.access_token).unwrap().sid, "sid-1");'),
    ("refresh_access_token_rotates_refresh_token", 900,
     "        let pair = issuer.refresh_access_token(&store, &login.refresh_token).await.unwrap();\n"
     '        assert_ne!(pair.refresh_token, login.refresh_token, "refresh token must rotate on every use");'),
    ("reused_refresh_token_revokes_family", 900,
     "        issuer.refresh_access_token(&store, &login.refresh_token).await.unwrap();\n"
     "        let again = issuer.refresh_access_token(&store, &login.refresh_token).await;\n"
     "        assert!(matches!(again, Err(TokenError::Refresh(_))));"),
    ("expired_access_token_is_refreshed", -5,
     "        assert!(matches!(issuer.verify(&login.access_token), Err(TokenError::Expired(_))));\n"
     "        let pair = issuer.refresh_access_token(&store, &login.refresh_token).await.unwrap();\n"
     "        assert!(issuer.verify(&pair.access_token).is_err());")])
REFRESH_PAIR = '''
    pub async fn issue_pair(&self, store: &RefreshStore, sub: &str, sid: &str) -> Result<TokenPair, TokenError> {
        let refresh_token = new_refresh_token();
        store.insert(&refresh_token, &RefreshRecord { sub: sub.to_owned(), sid: sid.to_owned() }).await?;
        Ok(TokenPair { access_token: self.issue_access_token(sub, sid)?, refresh_token, expires_in: self.access_ttl_secs })
    }

    /// Exchanges a refresh token for a new access token and a rotated refresh token.
    pub async fn refresh_access_token(&self, store: &RefreshStore, presented: &str) -> Result<TokenPair, TokenError> {
        let record = store.take(presented).await?;
        let access_token = self.issue_access_token(&record.sub, &record.sid)?;
        let refresh_token = new_refresh_token();
        store.insert(&refresh_token, &record).await?;
        Ok(TokenPair { access_token, refresh_token: presented.to_owned(), expires_in: self.access_ttl_secs })
    }
'''


def refresh_rs(backend):
    redis = backend == "redis"
    field, err = ("redis: redis::aio::ConnectionManager", "Redis(#[from] redis::RedisError)") if redis else \
        ("pool: sqlx::PgPool", "Db(#[from] sqlx::Error)")
    insert = ('conn.set_ex(format!("refresh:{token}"), format!("{}:{}", record.sub, record.sid), self.ttl_secs)'
              if redis else 'sqlx::query("INSERT INTO refresh_tokens (token_sha256, sub, sid, expires_at) '
              'VALUES ($1, $2, $3, now() + make_interval(secs => $4))")\n            .bind(hash(token)).bind(&record.sub)'
              '.bind(&record.sid).bind(self.ttl_secs as f64)\n            .execute(&self.pool)')
    take = ('let value: Option<String> = conn.get_del(format!("refresh:{token}")).await?;\n        let (sub, sid) = '
            'value.as_deref().and_then(|v| v.split_once(\':\')).ok_or(RefreshError::Unknown)?;\n        '
            'Ok(RefreshRecord { sub: sub.to_owned(), sid: sid.to_owned() })' if redis else
            'let row: Option<(String, String)> = sqlx::query_as("DELETE FROM refresh_tokens WHERE token_sha256 = $1 '
            'AND expires_at > now() RETURNING sub, sid")\n            .bind(hash(token))\n            '
            '.fetch_optional(&self.pool)\n            .await?;\n        let (sub, sid) = row.ok_or(RefreshError::Unknown)?;'
            '\n        Ok(RefreshRecord { sub, sid })')
    conn = "        let mut conn = self.redis.clone();\n" if redis else ""
    hash = "" if redis else ("\nfn hash(token: &str) -> Vec<u8> {\n    use sha2::Digest;\n"
                             "    sha2::Sha256::digest(token.as_bytes()).to_vec()\n}\n")
    return f'''//! Refresh tokens: opaque, single-use, stored server-side ({'Redis' if redis else 'Postgres, sha256-hashed'}).

use rand::RngCore;

#[derive(Debug, thiserror::Error)]
pub enum RefreshError {{
    #[error("unknown, expired or already used refresh token")]
    Unknown,
    #[error(transparent)]
    {err},
}}

pub struct RefreshRecord {{
    pub sub: String,
    pub sid: String,
}}

pub struct RefreshStore {{
    {field},
    ttl_secs: {'u64' if redis else 'i64'},
}}

pub fn new_refresh_token() -> String {{
    let mut bytes = [0u8; 32];
    rand::thread_rng().fill_bytes(&mut bytes);
    format!("rt_{{}}", base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes))
}}
{hash}
impl RefreshStore {{
    pub async fn insert(&self, token: &str, record: &RefreshRecord) -> Result<(), RefreshError> {{
{conn}        {insert}
            .await?;
        Ok(())
    }}

    pub async fn take(&self, token: &str) -> Result<RefreshRecord, RefreshError> {{
{conn}        {take}
    }}
}}
'''


MIGRATION = """-- 0007: refresh tokens (#214). Only the sha256 of a token is stored.
CREATE TABLE refresh_tokens (
    token_sha256 BYTEA PRIMARY KEY,
    sub          TEXT        NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    sid          TEXT        NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    expires_at   TIMESTAMPTZ NOT NULL
);
CREATE INDEX refresh_tokens_sid ON refresh_tokens (sid);
CREATE INDEX refresh_tokens_expires_at ON refresh_tokens (expires_at);
"""
MIGRATION_DESCRIBE = """                       Table "public.refresh_tokens"
    Column    |           Type           | Collation | Nullable | Default
--------------+--------------------------+-----------+----------+---------
 token_sha256 | bytea                    |           | not null |
 sub          | text                     |           | not null |
 sid          | text                     |           | not null |
 created_at   | timestamp with time zone |           | not null | now()
 expires_at   | timestamp with time zone |           | not null |
Indexes:
    "refresh_tokens_pkey" PRIMARY KEY, btree (token_sha256)
    "refresh_tokens_expires_at" btree (expires_at)
    "refresh_tokens_sid" btree (sid)
Foreign-key constraints:
    "refresh_tokens_sub_fkey" FOREIGN KEY (sub) REFERENCES users(id) ON DELETE CASCADE"""
RUST_COMMITS = [
    ("feat(auth): refresh_ttl_secs setting (#214)", ["src/config.rs"]),
    ("feat(auth): Postgres-backed refresh tokens (#214)", ["migrations/0007_refresh_tokens.sql", "src/auth/refresh.rs"]),
    ("feat(auth): refresh_access_token with rotation (#214)", ["src/auth/token.rs", "src/auth/middleware.rs"]),
    ("feat(api): POST /v1/token/refresh, refresh_token at login (#214)", ["src/routes/session.rs"]),
]
COMPILE_ERRORS = {
    3: ("E0432", "unresolved import `crate::auth::refresh`", "src/auth/token.rs", "crate::auth::refresh",
        "could not find `refresh` in `auth`", ("src/auth/mod.rs", "pub mod middleware;\n",
                                               "pub mod middleware;\npub mod refresh;\n")),
    4: ("E0004", "non-exhaustive patterns: `Err(TokenError::Refresh(_))` not covered", "src/auth/middleware.rs",
        "issuer.verify(token)", "pattern `Err(TokenError::Refresh(_))` not covered",
        ("src/auth/middleware.rs", "        Err(TokenError::Invalid(err)) => Err(ErrorUnauthorized(err.to_string())),\n",
         "        Err(TokenError::Invalid(err)) => Err(ErrorUnauthorized(err.to_string())),\n"
         "        Err(TokenError::Refresh(err)) => Err(ErrorUnauthorized(err.to_string())),\n")),
}
RUST_STEPS = [
    ("src/config.rs", "    pub access_ttl_secs: i64,\n", "    pub access_ttl_secs: i64,\n    /// Lifetime of a "
     "refresh token. 1_209_600 s = 14 days.\n    pub refresh_ttl_secs: i64,\n", None),
    ("src/config.rs", "            access_ttl_secs: 900,\n", "            access_ttl_secs: 900,\n"
     "            refresh_ttl_secs: 1_209_600,\n", "refresh TTL lives next to the access TTL; env var AUTH_REFRESH_TTL_SECS"),
    ("src/auth/refresh.rs", None, refresh_rs("redis"), "RefreshStore::take uses GETDEL so a token can be used once"),
    ("src/auth/token.rs", "use crate::config::AuthConfig;\n", "use crate::auth::refresh::{new_refresh_token, "
     "RefreshError, RefreshRecord, RefreshStore};\nuse crate::config::AuthConfig;\n", None),
    ("src/auth/token.rs", "    Invalid(#[from] jsonwebtoken::errors::Error),\n}\n",
     "    Invalid(#[from] jsonwebtoken::errors::Error),\n    #[error(transparent)]\n    Refresh(#[from] RefreshError),"
     "\n}\n\n#[derive(Debug, Clone, Serialize)]\npub struct TokenPair {\n    pub access_token: String,\n"
     "    pub refresh_token: String,\n    pub expires_in: i64,\n}\n", "TokenPair is also the JSON body of the refresh route"),
    ("src/auth/token.rs", "        Ok(claims)\n    }\n", "        Ok(claims)\n    }\n" + REFRESH_PAIR,
     "refresh_access_token: take() the old token, issue access token, insert a fresh refresh token"),
    ("src/auth/token.rs", "Err(TokenError::Expired(_))));\n    }\n}\n",
     "Err(TokenError::Expired(_))));\n    }\n" + REFRESH_TESTS + "}\n", None),
    ("src/routes/session.rs", "    pub access_token: String,\n", "    pub access_token: String,\n"
     "    pub refresh_token: String,\n", None),
    ("src/routes/session.rs", "    let access_token = issuer.issue_access_token(&user.id, &sid)?;\n    Ok(HttpResponse::"
     "Ok().json(LoginResponse { access_token, token_type: \"Bearer\", expires_in: 900 }))\n}\n",
     "    let pair = issuer.issue_pair(&refresh, &user.id, &sid).await?;\n    Ok(HttpResponse::Ok().json(LoginResponse "
     "{ access_token: pair.access_token, refresh_token: pair.refresh_token, token_type: \"Bearer\", expires_in: "
     "pair.expires_in }))\n}\n\n#[derive(Deserialize)]\npub struct RefreshRequest {\n    pub refresh_token: String,\n}"
     "\n\n#[post(\"/v1/token/refresh\")]\npub async fn refresh(\n    body: web::Json<RefreshRequest>,\n"
     "    refresh: web::Data<RefreshStore>,\n    issuer: web::Data<TokenIssuer>,\n) -> actix_web::Result<HttpResponse> "
     "{\n    let pair = issuer.refresh_access_token(&refresh, &body.refresh_token).await?;\n    tracing::info!(refresh_"
     "token = %body.refresh_token, \"access token refreshed\");\n    Ok(HttpResponse::Ok().json(pair))\n}\n",
     "expires_in now comes from the config instead of the 900 literal reviewer spotted"),
    ("src/routes/session.rs", "    issuer: web::Data<TokenIssuer>,\n) -> actix_web::Result<HttpResponse> {\n    let user",
     "    refresh: web::Data<RefreshStore>,\n    issuer: web::Data<TokenIssuer>,\n) -> actix_web::Result<HttpResponse> "
     "{\n    let user", None),
    ("src/auth/middleware.rs", "access token expired; session ends", "access token expired; client should call "
     "/v1/token/refresh", None),
]


def line_of(repo, path, needle, after=None) -> int:
    """1-based line of the first `needle`, or of the first after the line holding `after`."""
    start = line_of(repo, path, after) if after else 0
    for n, line in enumerate(repo.files[path].splitlines(), 1):
        if needle in line and n > start:
            return n
    raise KeyError((path, needle))


def read(t, repo, agent, path, start=1, end=None, **kw):
    end = min(end or 10_000, len(repo.files[path].splitlines()))
    return t.tool(agent, "read_file", {"path": path, "start_line": start, "end_line": end},
                  repo.read(path, start, end), **kw)


def grep(t, repo, agent, pattern, prefix="", **kw):
    out = repo.grep(pattern, prefix)
    return t.tool(agent, "grep", {"pattern": pattern, "path": prefix or ".", "fixed_strings": True, "context": 2},
                  out, 0 if out else 1, **kw)


def edit(t, repo, agent, path, old, new, **kw):
    return t.tool(agent, "edit_file", {"path": path, "old_string": old, "new_string": new},
                  repo.edit(path, old, new), **kw)


def write(t, repo, agent, path, text, **kw):
    repo.files[path] = text
    return t.tool(agent, "write_file", {"path": path, "content": text},
                  f"Wrote {len(text.splitlines())} lines ({len(text.encode())} bytes) to {path}", **kw)


def git(t, agent, args, output, code=0, **kw):
    return t.tool(agent, "git", {"args": args}, output, code, **kw)


SYMBOL = re.compile(r"^\s*(?:pub (?:async )?fn|pub struct|pub enum|def|export function|class)\s+([A-Za-z_]\w*)", re.M)


def symbols(repo):
    """Public names defined in the repo, in file order, for usage greps."""
    return list(dict.fromkeys(name for _, text in sorted(repo.files.items())
                              for name in SYMBOL.findall(text) if len(name) > 3 and not name.startswith("_")))


RUST_TESTS = [f"{module}::tests::{name}" for module, names in {
    "auth::claims": "parses_standard_claims rejects_missing_sub rejects_non_numeric_exp sid_round_trips "
                    "iat_in_future_is_rejected",
    "auth::middleware": "missing_header_is_401 non_bearer_scheme_is_401 expired_token_is_401 valid_token_sets_claims",
    "auth::password": "argon2_hash_verifies wrong_password_fails rehash_on_old_params constant_time_compare",
    "auth::token": "issued_token_verifies expired_token_is_rejected tampered_signature_is_rejected "
                   "wrong_algorithm_is_rejected",
    "config": "defaults_are_sane reads_env_overrides rejects_empty_secret",
    "routes::me": "me_returns_profile me_requires_auth",
    "routes::session": "login_returns_token login_wrong_password_is_401 login_unknown_email_is_401 "
                       "login_rate_limited logout_clears_session",
    "store": "create_user find_by_email email_is_case_insensitive duplicate_email_conflicts "
             "disabled_user_cannot_login password_reset_token_expires",
    "routes::health": "health_ok",
    "telemetry": "request_id_propagates redacts_authorization_header json_log_format spans_include_sid",
}.items() for name in names.split()]
NEW_RUST_TESTS = ["auth::token::tests::" + n for n in ("refresh_access_token_issues_new_pair",
                  "refresh_access_token_rotates_refresh_token", "reused_refresh_token_revokes_family",
                  "expired_access_token_is_refreshed")]


def rust_failure(repo, test, needle, message):
    """A failing test's panic message and backtrace, pointing at the line holding `needle`."""
    path, rustc = "src/auth/token.rs", "/rustc/4eb161250e340c8f48f66e2b929ef4a5bed7c181/library"
    at, fn_at = line_of(repo, path, needle), line_of(repo, path, "fn " + test.rsplit("::", 1)[1])
    frames = [("__rustc::rust_begin_unwind", f"{rustc}/std/src/panicking.rs:697:5"),
              ("core::panicking::panic_fmt", f"{rustc}/core/src/panicking.rs:75:14")]
    if "left" in message[0]:
        frames += [("core::panicking::assert_failed_inner", None),
                   ("core::panicking::assert_failed", f"{rustc}/core/src/panicking.rs:380:5")]
    else:
        frames += [("core::panicking::panic", f"{rustc}/core/src/panicking.rs:145:5")]
    frames += [(f"auth_service::{test}", f"./{path}:{at}:9"), (f"auth_service::{test}::{{{{closure}}}}",
               f"./{path}:{fn_at}:{len(repo.files[path].splitlines()[fn_at - 1]) - 1}"),
               ("core::ops::function::FnOnce::call_once", f"{rustc}/core/src/ops/function.rs:250:5")]
    return test, [f"thread '{test}' panicked at {path}:{at}:9:"] + message, frames


def cargo_test(t, names, failure=None, secs=14.82):
    """`cargo test` output; `failure` = (test name, panic message lines, frames)."""
    names = list(names)
    t.rng.shuffle(names)
    failed = failure[0] if failure else None
    out = ["   Compiling auth-service v0.4.2 (/repo)",
           f"    Finished `test` profile [unoptimized + debuginfo] target(s) in {secs:.2f}s",
           "     Running unittests src/lib.rs (target/debug/deps/auth_service-3f9a2c1d8e7b6a50)", "",
           f"running {len(names)} tests"]
    out += [f"test {n} ... {'FAILED' if n == failed else 'ok'}" for n in names]
    n_ok = len(names) - (1 if failed else 0)
    timing = f"0 ignored; 0 measured; 0 filtered out; finished in 0.{t.rng.randint(28, 61)}s"
    if not failed:
        return "\n".join(out + ["", f"test result: ok. {n_ok} passed; 0 failed; {timing}", "",
                                "   Doc-tests auth_service", "", "running 0 tests", "",
                                "test result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out"]), 0
    out += ["", "failures:", "", f"---- {failed} stdout ----"] + failure[1] + ["stack backtrace:"]
    for i, (fn, at) in enumerate(failure[2]):
        out += [f"  {i:>2}: {fn}"] + ([f"             at {at}"] if at else [])
    out += ["note: Some details are omitted, run with `RUST_BACKTRACE=full` for a verbose backtrace.", "", "",
            "failures:", f"    {failed}", "", f"test result: FAILED. {n_ok} passed; 1 failed; {timing}", "",
            "error: test failed, to rerun pass `--lib`"]
    return "\n".join(out), 101


def pytest_run(results, failure=None):
    """`pytest` output; results = [(test, passed)], failure = traceback lines of the failed test."""
    dots = "".join("." if ok else "F" for _, ok in results)
    head = ["============================= test session starts ==============================",
            "platform linux -- Python 3.11.7, pytest-8.3.4, pluggy-1.5.0", "rootdir: /repo/clients/python",
            "configfile: pyproject.toml", f"collected {len(results)} items", "",
            f"tests/test_client.py {dots}" + " " * max(1, 52 - len(dots)) + "[100%]", ""]
    n_ok = sum(ok for _, ok in results)
    if not failure:
        return "\n".join(head + [f"============================== {n_ok} passed in 0.19s =============================="]), 0
    name = next(n for n, ok in results if not ok)
    head += ["=================================== FAILURES ===================================",
             f"_____________________ {name} _____________________"] + failure
    head += ["=========================== short test summary info ============================",
             f"FAILED tests/test_client.py::{name} - {failure[-1]}",
             f"========================= 1 failed, {n_ok} passed in 0.23s ========================="]
    return "\n".join(head), 1


def node_test(results, failure=None):
    """`npm test` (node --test) output; failure = error lines with stack frames."""
    out = ["> dashboard@1.8.0 test", "> node --test test/", ""]
    for name, ok in results:
        out.append(f"{'✔' if ok else '✖'} {name} ({0.1 + len(name) / 37:.2f}ms)")
        if not ok:
            out += ["  " + line for line in failure]
    n_ok = sum(ok for _, ok in results)
    out += [f"ℹ tests {len(results)}", "ℹ suites 0", f"ℹ pass {n_ok}", f"ℹ fail {len(results) - n_ok}",
            "ℹ cancelled 0", "ℹ skipped 0", "ℹ todo 0", "ℹ duration_ms 61.48"]
    return "\n".join(out), 0 if n_ok == len(results) else 1


def run(t, agent, cmd, result, secs, **kw):
    output, code = result
    return t.tool(agent, "bash", {"cmd": cmd, "cwd": "/repo"}, output, code, int(secs * 1000), **kw)


def survey(t, repo, agent, paths, remark, chunk=24):
    """Reads each file in chunks, jotting a private note now and then, then greps the names it defines."""
    for path in paths:
        n = len(repo.files[path].splitlines())
        for start in range(1, n + 1, chunk):
            read(t, repo, agent, path, start, start + chunk - 1)
        if path.endswith((".rs", ".py", ".js")) and t.rng.random() < 0.2:
            t.note(agent, f"{path}: " + remark.format(n=n))
    for name in symbols(Repo({p: repo.files[p] for p in paths})):
        grep(t, repo, agent, name)


def tell_story(t, repo):
    ids = {}
    phases = [(investigate, "Investigation is done and the facts are in. Next: implement. coder takes the Rust "
               "service; reviewer, keep an eye on the storage choice."),
              (implement, "Rust side is on the branch with 42 green tests and Postgres storage."),
              (fix_tests, "All three suites are green. Handing over to review."),
              (review, "Approved. Deploying to staging before anything else."),
              (lambda *a: rollout(*a, "staging", ["7/migrate refresh tokens"], 2), "Staging looks healthy. Before "
               "production we close the reuse gap reviewer found."),
              (harden, "Reuse detection reviewed. Production next, watched for three hours."),
              (lambda *a: rollout(*a, "production", ["7/migrate refresh tokens", "8/migrate refresh tokens used at"],
                                  3), None)]
    for phase, standup in phases:
        phase(t, repo, ids)
        if standup:
            t.say("planner", standup, role="orchestrator")
    done = t.say("planner", "Done with #214, live in production: users stay signed in through refresh, access "
                 "tokens last 10 minutes, refresh tokens 14 days, stored hashed in Postgres, and replaying a rotated "
                 "token revokes its session. Closing the issue.", role="orchestrator", importance=0.8, cause=ids["user"])
    t.tool("planner", "bash", {"cmd": "gh issue close 214 --reason completed --comment 'Fixed by #231'"},
           "✓ Closed issue #214 (Session ends after 15 minutes while using the dashboard)", 0, 1100, cause=done)


def investigate(t, repo, ids):
    ids["user"] = t.say("planner", "Issue #214 from support: customers say the login session dies after fifteen "
                        "minutes, even while they are actively using the dashboard. Add token refresh so that "
                        "active users stay signed in.", role="user", importance=0.9)
    ids["kickoff"] = t.say("planner", "Taking #214. Plan: investigate how sessions end today, add refresh tokens to "
                           "the Rust auth service, then update the Python client and the web dashboard, then "
                           "review. coder owns the code, reviewer owns the review.", role="orchestrator",
                           importance=0.7, cause=ids["user"])
    t.tool("planner", "bash", {"cmd": "gh issue view 214"}, ISSUE_214, 0, 900, cause=ids["user"])
    for key, value in PREFERENCES:
        ids["pref." + key] = t.emit("planner", "preference_set", {"key": key, "value": value}, "shared", 0.5)
    for task_id, title in TASKS.items():
        t.task_update("planner", task_id, "open", title=title)
    t.task = "task-214-investigate"
    ids["phase.investigate"] = t.emit("planner", "phase_started", {
        "phase": "investigate", "goal": "Explain why sessions end after 15 minutes and map every place that "
        "issues, checks or stores tokens"}, importance=0.6)
    ids["handoff1"] = t.emit("planner", "handoff_sent", {
        "to": "coder", "task": "task-214-investigate",
        "summary": "Sessions end after 15 minutes (issue #214). Find where the access token lifetime is set, how "
                   "expiry is detected in the service and in both clients, and whether anything like a refresh "
                   "token exists already.",
        "artifacts": ["src/auth/token.rs", "src/auth/middleware.rs", "clients/python/authsvc/client.py",
                      "web/src/session.js"],
        "decisions": [], "constraints": ["read-only for now: no edits during investigate",
                                         "report findings as facts so reviewer can check them"]}, importance=0.8)
    t.emit("coder", "handoff_received", {"from": "planner", "handoff_id": ids["handoff1"]}, cause=ids["handoff1"])
    t.emit("coder", "handoff_acknowledged", {"handoff_id": ids["handoff1"],
                                             "note": "Starting with src/auth, then the two clients."})
    t.task_update("coder", "task-214-investigate", "in_progress", note="surveying the repository")
    listing = "\n".join(sorted(EXTRA_FILES + list(repo.files)))
    t.tool("coder", "bash", {"cmd": "git ls-files | grep -v '^vendor/'"}, listing)
    git(t, "coder", ["log", "--oneline", "-10"], GIT_LOG)
    survey(t, repo, "coder", sorted(repo.files), "{n} lines; nothing refresh-related in here", chunk=20)
    for pattern in ("expires_in", "refresh", "900", "localStorage", "401"):
        grep(t, repo, "coder", pattern)
    git(t, "coder", ["blame", "-L", "14,14", "src/config.rs"],
        "c02f6d1a (Priya Raman 2025-11-03 10:12:44 +0100 14)             access_ttl_secs: 900,")
    run(t, "coder", "cargo test", cargo_test(t, RUST_TESTS, secs=41.27), 43.9)
    run(t, "coder", "cd clients/python && pytest --tb=native", pytest_run([(n, True) for n in PY_TESTS[:2]]), 1.9)
    run(t, "coder", "cd web && npm test", node_test([(n, True) for n in JS_TESTS[:2]]), 2.4)
    run(t, "coder", "faketime -f '+0 x60' ./scripts/repro-214.sh", (REPRO_214, 0), 16.2)
    ids["fact.ttl900"] = t.fact("coder", "auth-service", "access_token_ttl_seconds", "900",
                                valid_from="2025-11-03T09:12:44Z", importance=0.7)
    t.fact("coder", "auth-service", "has_refresh_flow", "false", valid_from="2025-06-12T00:00:00Z")
    ids["fact.raised_by"] = t.fact("coder", "TokenExpiredError", "raised_by", "TokenIssuer::verify_signature",
                                   confidence=0.6)
    t.fact("coder", "python-client", "on_401", "raises TokenExpiredError, never retries", confidence=0.9)
    t.fact("coder", "web-dashboard", "stores_session_in", "localStorage key auth.session")
    t.fact("coder", "auth-service", "uses_crate", "jsonwebtoken 9.3.0", valid_from="2025-12-19T00:00:00Z")
    ids["findings"] = t.say("coder", "Findings for #214: access tokens live 900 s (src/config.rs:14, also hard-coded "
                            "as expires_in: 900 in src/routes/session.rs). When exp passes, require_auth maps "
                            "TokenExpiredError to 401 'session expired, please sign in again'. No refresh token "
                            "exists anywhere; the Python client raises TokenExpiredError on 401 and the dashboard "
                            "just shows the sign-in page. Reproduced with faketime: 401 at t+901s.",
                            role="coder", importance=0.8, cause=ids["handoff1"])
    t.say("planner", "Thanks. reviewer, can you sanity-check the expiry path before we design anything?",
          role="orchestrator")
    survey(t, repo, "reviewer", ["src/auth/middleware.rs", "src/auth/token.rs", "src/routes/session.rs"],
           "expiry handling checked ({n} lines)", chunk=30)
    grep(t, repo, "reviewer", "Expired(")
    t.fact("reviewer", "require_auth", "maps_expired_token_to", "401 session expired, please sign in again")
    t.say("reviewer", "Confirmed: expiry is only detected server-side in TokenIssuer::verify and surfaced by "
          "require_auth. One nit: the expires_in: 900 literal in the login route ignores access_ttl_secs.",
          role="reviewer")
    ids["d.redis"] = t.decide("planner", "Refresh token storage", "Redis, key refresh:{sid}, 14-day TTL",
                              "Fast lookups and built-in expiry; the service already talks to Redis for rate "
                              "limiting.", 0.8, cause=ids["findings"])
    ids["fact.store.redis"] = t.fact("planner", "auth-service", "refresh_token_store", "redis", confidence=0.8)
    ids["d.rotation"] = t.decide("planner", "Refresh token format and rotation",
                                 "Opaque 256-bit random refresh tokens, 14-day lifetime, rotated on every use; "
                                 "presenting an already rotated token revokes the whole session (sid)",
                                 "Rotation limits the damage of a leaked refresh token and lets us detect reuse.",
                                 0.9, cause=ids["findings"])
    t.emit("planner", "phase_completed", {"phase": "investigate", "phase_id": ids["phase.investigate"],
                                          "outcome": "root cause known: 900 s access tokens and no refresh flow"})
    t.task_update("planner", "task-214-investigate", "done", note="findings recorded as facts")

def check(t, agent="coder", warn=None, **kw):
    out = ["    Checking auth-service v0.4.2 (/repo)"]
    if warn:
        out += [f"warning: {warn[0]}", f"  --> {warn[1]}", "   |", "   = note: `#[warn(dead_code)]` on by default", ""]
    out.append(f"    Finished `dev` profile [unoptimized + debuginfo] target(s) in {t.rng.uniform(1.5, 6):.2f}s")
    return run(t, agent, "cargo check --all-targets", ("\n".join(out), 0), t.rng.uniform(2, 7), **kw)


def commit(t, agent, message, paths):
    git(t, agent, ["add"] + paths, "")
    sha = hashlib.sha1(message.encode()).hexdigest()[:7]
    stat = "\n".join(f" {p} | {7 + len(p) % 23} +++++---" for p in paths)
    git(t, agent, ["commit", "-m", message], f"[feat/214-token-refresh {sha}] {message}\n{stat}\n"
        f" {len(paths)} files changed, {sum(9 + len(p) % 31 for p in paths)} insertions(+), "
        f"{sum(len(p) % 7 for p in paths)} deletions(-)")


def implement(t, repo, ids):
    t.task = "task-214-rust-refresh"
    ids["phase.implement"] = t.emit("planner", "phase_started", {
        "phase": "implement", "goal": "Refresh tokens and POST /v1/token/refresh in the Rust service"},
        importance=0.6)
    ids["handoff2"] = t.emit("planner", "handoff_sent", {
        "to": "coder", "task": "task-214-rust-refresh",
        "summary": "Implement refresh tokens in the Rust service: issue one at login, add POST /v1/token/refresh "
                   "that exchanges a refresh token for a new access token and a rotated refresh token.",
        "artifacts": ["src/auth/token.rs", "src/routes/session.rs", "src/config.rs"],
        "decisions": [ids["d.redis"], ids["d.rotation"]],
        "constraints": ["keep the login response backwards compatible (add fields, do not rename)",
                        "function name: refresh_access_token", "no unwrap() outside tests"]}, importance=0.85)
    t.emit("coder", "handoff_received", {"from": "planner", "handoff_id": ids["handoff2"]}, cause=ids["handoff2"])
    t.emit("coder", "handoff_acknowledged", {"handoff_id": ids["handoff2"]})
    t.task_update("coder", "task-214-rust-refresh", "in_progress")
    git(t, "coder", ["switch", "-c", "feat/214-token-refresh"], "Switched to a new branch 'feat/214-token-refresh'")
    t.emit("coder", "memory_cited", {"item_id": ids["pref.rust.errors"]}, cause=ids["pref.rust.errors"])
    for step, (path, old, new, why) in enumerate(RUST_STEPS):
        if path in repo.files and old:
            at = line_of(repo, path, old.splitlines()[0])
            read(t, repo, "coder", path, max(1, at - 6), at + len(old.splitlines()) + 6)
            edit(t, repo, "coder", path, old, new)
        else:
            write(t, repo, "coder", path, new)
        if why:
            t.note("coder", why)
        if step in COMPILE_ERRORS:
            code, msg, path, needle, label, fix = COMPILE_ERRORS[step]
            at = line_of(repo, path, needle)
            src = repo.files[path].splitlines()[at - 1]
            col = src.index(needle) + 1
            pad = " " * len(str(at))
            out = ["    Checking auth-service v0.4.2 (/repo)", f"error[{code}]: {msg}", f"{pad}--> {path}:{at}:{col}",
                   f"{pad} |", f"{at} | {src}", f"{pad} | {' ' * (col - 1)}{'^' * len(needle)} {label}", "",
                   f"For more information about this error, try `rustc --explain {code}`.",
                   "error: could not compile `auth-service` (lib) due to 1 previous error"]
            bad = run(t, "coder", "cargo check --all-targets", ("\n".join(out), 101), 2.4)
            edit(t, repo, "coder", *fix, cause=bad)
        check(t, warn=("field `refresh_ttl_secs` is never read", "src/config.rs:9:9") if step == 0 else None)
    fail = rust_failure(repo, NEW_RUST_TESTS[1], "refresh token must rotate", [
        "assertion `left != right` failed: refresh token must rotate on every use",
        '  left: "rt_4q9Xc2W0mZbH7tKp1sVd8eYf"', ' right: "rt_4q9Xc2W0mZbH7tKp1sVd8eYf"'])
    ids["cargo.fail"] = run(t, "coder", "RUST_BACKTRACE=1 cargo test", cargo_test(t, RUST_TESTS + NEW_RUST_TESTS, fail),
                            15.4, importance=0.7)
    t.note("coder", "rotation test fails: left == right. refresh_access_token inserts the new token but returns "
           "`presented` in the TokenPair, so the client keeps the old, now dead, token.", cause=ids["cargo.fail"])
    at = line_of(repo, "src/auth/token.rs", "pub async fn refresh_access_token")
    read(t, repo, "coder", "src/auth/token.rs", at - 1, at + 7, cause=ids["cargo.fail"])
    fix = edit(t, repo, "coder", "src/auth/token.rs", "refresh_token: presented.to_owned(), expires_in",
               "refresh_token, expires_in", cause=ids["cargo.fail"])
    one = NEW_RUST_TESTS[1]
    run(t, "coder", f"cargo test {one}", (f"    Finished `test` profile [unoptimized + debuginfo] target(s) in 3.02s\n"
        "     Running unittests src/lib.rs (target/debug/deps/auth_service-3f9a2c1d8e7b6a50)\n\nrunning 1 test\n"
        f"test {one} ... ok\n\ntest result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 41 filtered out; "
        "finished in 0.02s", 0), 3.4, cause=fix)
    t.say("coder", "Rust side works with the Redis store: login returns a refresh_token and POST /v1/token/refresh "
          "rotates it. The rotation test caught me returning the old token; fixed.", role="coder")
    ids["ops"] = t.say("reviewer", "Heads-up before this goes further: ops confirmed production has no Redis at all "
                       "(rate limiting uses the in-process governor there) and staging Redis is ephemeral, so every "
                       "deploy would sign everybody out. Refresh tokens need durable storage.", role="reviewer",
                       importance=0.8)
    t.emit("planner", "memory_cited", {"item_id": ids["d.redis"]}, cause=ids["ops"])
    ids["d.postgres"] = t.decide("planner", "Refresh token storage", "Postgres table refresh_tokens, storing only "
                                 "sha256(token), one row per live token, indexed by sid",
                                 "Redis is not available in production and is ephemeral in staging; Postgres is "
                                 "already the system of record and survives deploys. Hashing means a database "
                                 "leak does not leak usable tokens.", 0.9, supersedes=ids["d.redis"],
                                 cause=ids["ops"])
    t.fact("planner", "auth-service", "refresh_token_store", "postgres table refresh_tokens (sha256 of token)",
           valid_from=rfc3339(t.now), importance=0.8, cause=ids["d.postgres"])
    t.say("planner", f"coder: switch RefreshStore to Postgres per decision {ids['d.postgres']}; keep the API of "
          "RefreshStore (insert/take) so token.rs does not change.", role="orchestrator", cause=ids["d.postgres"])
    t.emit("coder", "memory_cited", {"item_id": ids["d.postgres"]}, cause=ids["d.postgres"])
    write(t, repo, "coder", "migrations/0007_refresh_tokens.sql", MIGRATION, cause=ids["d.postgres"])
    write(t, repo, "coder", "src/auth/refresh.rs", refresh_rs("postgres"), cause=ids["d.postgres"])
    check(t)
    run(t, "coder", "sqlx migrate run", ("Applied 7/migrate refresh tokens (14.892ms)", 0), 1.2)
    run(t, "coder", "psql $DATABASE_URL -c '\\d refresh_tokens'", (MIGRATION_DESCRIBE, 0), 0.3)
    run(t, "coder", "cargo test", cargo_test(t, RUST_TESTS + NEW_RUST_TESTS, secs=22.61), 24.8, importance=0.6)
    run(t, "coder", "cargo clippy --all-targets -- -D warnings", ("    Checking auth-service v0.4.2 (/repo)\n"
        "    Finished `dev` profile [unoptimized + debuginfo] target(s) in 4.87s", 0), 5.3)
    run(t, "coder", "cargo fmt --check", ("", 0), 0.6)
    t.tool("coder", "bash", {"cmd": "cargo run --quiet -- --port 8080 &"}, "2026-01-06T10:02:11.418Z  INFO "
           "auth_service: listening on 0.0.0.0:8080 (access_ttl_secs=900, refresh_ttl_secs=1209600)", 0, 8100)
    for cmd, output, code in CURL_CHECKS:
        t.tool("coder", "bash", {"cmd": cmd}, output, code)
    t.note("coder", "manual check ok: refresh rotates, replaying the old token is a 401, only the hash is stored.")
    for message, paths in RUST_COMMITS:
        commit(t, "coder", message, paths)
    t.task_update("coder", "task-214-rust-refresh", "done", note="42 tests pass; Postgres-backed refresh tokens")
    t.emit("planner", "phase_completed", {"phase": "implement", "phase_id": ids["phase.implement"],
                                          "outcome": "refresh tokens issued at login and rotated by POST /v1/token/refresh"})


PY_STEPS = [
    ("clients/python/authsvc/client.py", "    access_token: str\n", "    access_token: str\n    refresh_token: str\n"),
    ("clients/python/authsvc/client.py", '        body = resp.json()\n        self.session = Session(body["access_token"], '
     'time.time() + body["expires_in"])\n        return self.session\n', '        self.session = self._session_from'
     '(resp.json())\n        return self.session\n\n    def _session_from(self, body: dict) -> Session:\n        return '
     'Session(body["access_token"], body["refresh_token"], time.time() + body["expires_in"])\n\n    def refresh(self) '
     '-> Session:\n        assert self.session is not None\n        resp = self.http.post(f"{self.base_url}/v1/token/'
     'refresh", json={"refresh_token": self.session.refresh_token})\n        if resp.status_code != 200:\n'
     '            raise TokenExpiredError(self.session.expires_at)\n        self.session = self._session_from(resp.json())'
     '\n        return self.session\n'),
    ("clients/python/authsvc/client.py", "            raise TokenExpiredError(self.session.expires_at)\n        headers",
     "            self.refresh()\n        headers"),
    ("clients/python/authsvc/client.py", "        if resp.status_code == 401:\n            raise TokenExpiredError("
     "self.session.expires_at)\n", "        if resp.status_code == 401:\n            self.refresh()\n            headers"
     ' = {"Authorization": f"Bearer {self.session.access_token}"}\n            resp = self.http.get(f"{self.base_url}'
     '{path}", headers=headers)\n'),
    ("clients/python/tests/test_client.py", '"access_token": "at-1", ', '"access_token": "at-1", "refresh_token": '
     '"rt-1", '),
    ("clients/python/tests/test_client.py", '        client.get("/v1/me")\n', '        client.get("/v1/me")\n\n\n'
     'def test_get_refreshes_expired_session():\n    http = FakeHttp(\n        post={"/v1/session": (200, login_body('
     'expires_in=-1)),\n              "/v1/token/refresh": (200, {"access_token": "at-2", "token_type": "Bearer", '
     '"expires_in": 900})},\n        get={"/v1/me": (200, {"id": "user-42"})},\n    )\n    client = AuthClient("http:'
     '//auth", http)\n    client.login("ada@example.com", "pw")\n    assert client.get("/v1/me") == {"id": "user-42"}\n'
     '    assert client.session.access_token == "at-2"\n\n\ndef test_refresh_failure_raises_token_expired():\n    http '
     '= FakeHttp(post={"/v1/session": (200, login_body(expires_in=-1)), "/v1/token/refresh": (401, {})})\n    client '
     '= AuthClient("http://auth", http)\n    client.login("ada@example.com", "pw")\n    with pytest.raises('
     'TokenExpiredError):\n        client.get("/v1/me")\n'),
]
JS_STEPS = [
    ("web/src/session.js", 'const STORAGE_KEY = "auth.session";\n', 'const STORAGE_KEY = "auth.session";\nconst '
     'REFRESH_MARGIN_MS = 60_000;\n\nfunction toSession(body) {\n  return { accessToken: body.access_token, '
     'refreshToken: body.refresh_token, expiresAt: decodeExpiry(body.access_token) };\n}\n'),
    ("web/src/session.js", "  const session = { accessToken: body.access_token, expiresAt: decodeExpiry(body.access_"
     "token) };\n", "  const session = toSession(body);\n"),
    ("web/src/session.js", "  return !session || now >= session.expiresAt;\n}\n", "  return !session || now >= "
     "session.expiresAt;\n}\n\nexport async function refreshSession(session, storage = window.localStorage) {\n  const "
     'body = await api.post("/v1/token/refresh", { refresh_token: session.refreshToken });\n  const next = toSession('
     "body);\n  storage.setItem(STORAGE_KEY, JSON.stringify(next));\n  return next;\n}\n\nexport function msUntil"
     "Refresh(session, now = Date.now()) {\n  return session.claims.exp * 1000 - REFRESH_MARGIN_MS - now;\n}\n\n"
     "export function scheduleRefresh(session, timers = globalThis) {\n  return timers.setTimeout(() => refreshSession("
     "session), Math.max(0, msUntilRefresh(session, timers.now())));\n}\n"),
    ("web/test/session.test.js", "import { decodeExpiry, isExpired }", "import { decodeExpiry, isExpired, refresh"
     "Session, scheduleRefresh }"),
    ("web/test/session.test.js", 'import { fakeToken } from "./helpers.js";\n', 'import { fakeStorage, fakeTimers, '
     'fakeToken, mockApi } from "./helpers.js";\n'),
    ("web/test/session.test.js", "  assert.equal(isExpired(null), true);\n});\n", "  assert.equal(isExpired(null), "
     'true);\n});\n\ntest("scheduleRefresh fires one minute before expiry", () => {\n  const timers = fakeTimers(1_000'
     '_000);\n  scheduleRefresh({ accessToken: "a", refreshToken: "r", expiresAt: 1_600_000 }, timers);\n  assert.equal'
     '(timers.lastDelay, 540_000);\n});\n\ntest("refreshSession stores the rotated token", async () => {\n  mockApi({ '
     '"/v1/token/refresh": { access_token: fakeToken({ exp: 1767690600 }), refresh_token: "rt-2" } });\n  const storage'
     ' = fakeStorage();\n  const next = await refreshSession({ refreshToken: "rt-1" }, storage);\n  assert.equal(next.'
     'refreshToken, "rt-2");\n});\n'),
]


def steps(t, repo, agent, edits, after):
    for path, old, new in edits:
        at = line_of(repo, path, old.splitlines()[0])
        read(t, repo, agent, path, max(1, at - 8), at + len(old.splitlines()) + 8)
        edit(t, repo, agent, path, old, new)
        after()


def fix_tests(t, repo, ids):
    t.task = "task-214-python-client"
    ids["phase.fix"] = t.emit("planner", "phase_started", {"phase": "fix-tests", "goal": "Python client and web "
                              "dashboard refresh transparently; all three test suites green"}, importance=0.6)
    t.task_update("planner", "task-214-python-client", "in_progress", note="assigned to coder")
    t.say("planner", "coder: the server side is in. Next, the Python client: refresh on expiry or on a 401, retry "
          "the request once, and raise TokenExpiredError only when the refresh itself fails.", role="orchestrator")
    ids["d.pyrefresh"] = t.decide("coder", "Python client refresh strategy", "Refresh lazily: on local expiry or on "
                                  "a 401, then retry the request once; no background thread",
                                  "The client is used from short-lived CLI commands and from workers; a thread "
                                  "would outlive the former and complicate the latter.", 0.6)
    survey(t, repo, "coder", [p for p in sorted(repo.files) if p.startswith(("clients/", "web/"))],
           "{n} lines read; listing what must change for refresh tokens", chunk=20)
    py = lambda: run(t, "coder", "cd clients/python && ruff check . && mypy authsvc", ("All checks passed!\n"
                     "Success: no issues found in 3 source files", 0), 2.8)
    steps(t, repo, "coder", PY_STEPS, py)
    test_at = line_of(repo, "clients/python/tests/test_client.py", 'assert client.get("/v1/me") == {"id"')
    client = "clients/python/authsvc/client.py"
    tb = ["Traceback (most recent call last):",
          f'  File "/repo/clients/python/tests/test_client.py", line {test_at}, in test_get_refreshes_expired_session',
          '    assert client.get("/v1/me") == {"id": "user-42"}', "           ^^^^^^^^^^^^^^^^^^^^",
          f'  File "/repo/{client}", line {line_of(repo, client, "            self.refresh()")}, in get',
          "    self.refresh()",
          f'  File "/repo/{client}", line {line_of(repo, client, "self.session = self._session_from(resp.json())", "def refresh")}'
          ", in refresh", "    self.session = self._session_from(resp.json())",
          "                   ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
          f'  File "/repo/{client}", line {line_of(repo, client, "return Session(body")}, in _session_from',
          '    return Session(body["access_token"], body["refresh_token"], time.time() + body["expires_in"])',
          "                                         ~~~~^^^^^^^^^^^^^^^^^", "KeyError: 'refresh_token'"]
    results = [(n, n != PY_TESTS[2]) for n in PY_TESTS]
    ids["py.fail"] = run(t, "coder", "cd clients/python && pytest --tb=native", pytest_run(results, tb), 2.1,
                         importance=0.7)
    t.note("coder", "KeyError: 'refresh_token' comes from the fake /v1/token/refresh response in the test, not the "
           "client: the server always returns a rotated refresh_token, so the fixture is what is wrong.",
           cause=ids["py.fail"])
    t.emit("coder", "memory_cited", {"item_id": ids["d.rotation"]}, cause=ids["py.fail"])
    edit(t, repo, "coder", "clients/python/tests/test_client.py", '(200, {"access_token": "at-2", "token_type"',
         '(200, {"access_token": "at-2", "refresh_token": "rt-2", "token_type"', cause=ids["py.fail"])
    run(t, "coder", "cd clients/python && pytest --tb=native -k refreshes", ("\n".join(pytest_run(
        [(PY_TESTS[2], True)])[0].replace("collected 1 items", "collected 4 items / 3 deselected / 1 selected")
        .splitlines()[:-1] + ["======================= 1 passed, 3 deselected in 0.08s "
                                                       "========================"]), 0), 1.1, cause=ids["py.fail"])
    run(t, "coder", "cd clients/python && pytest --tb=native", pytest_run([(n, True) for n in PY_TESTS]), 1.8,
        cause=ids["py.fail"])
    py()
    commit(t, "coder", "feat(python): refresh the session transparently (#214)",
           ["clients/python/authsvc/client.py", "clients/python/tests/test_client.py"])
    t.task_update("coder", "task-214-python-client", "done", note="4 passed")
    t.task = "task-214-web-client"
    t.task_update("planner", "task-214-web-client", "in_progress", note="assigned to coder")
    ids["d.margin"] = t.decide("coder", "Dashboard refresh timing", "Schedule a refresh 60 s before exp; on a 401 "
                               "refresh once and retry", "Proactive refresh avoids a visible failed request while "
                               "the user is typing; 60 s covers clock skew between browser and server.", 0.6)
    lint = lambda: run(t, "coder", "cd web && npm run lint", ("> dashboard@1.8.0 lint\n> eslint src test\n", 0), 3.1)
    steps(t, repo, "coder", JS_STEPS, lint)
    js, test_js = "web/src/session.js", "web/test/session.test.js"
    exp_at = line_of(repo, js, "session.claims.exp")
    sched_at = line_of(repo, js, "msUntilRefresh(session, timers")
    frames = [("msUntilRefresh", js, exp_at, repo.files[js].splitlines()[exp_at - 1].index(".exp") + 2),
              ("scheduleRefresh", js, sched_at, repo.files[js].splitlines()[sched_at - 1].index("msUntil") + 1),
              ("TestContext.<anonymous>", test_js, line_of(repo, test_js, "  scheduleRefresh({"), 3)]
    error = ["TypeError: Cannot read properties of undefined (reading 'exp')"]
    error += [f"    at {fn} (file:///repo/{path}:{line}:{col})" for fn, path, line, col in frames]
    error += ["    at Test.runInAsyncScope (node:async_hooks:214:14)", "    at Test.run (node:internal/test_runner/"
              "test:1047:25)", "    at async Test.processPendingSubtests (node:internal/test_runner/test:744:7)"]
    results = [(n, n != JS_TESTS[2]) for n in JS_TESTS]
    ids["js.fail"] = run(t, "coder", "cd web && npm test", node_test(results, error), 2.7, importance=0.7)
    t.note("coder", "session objects never had a `claims` field: toSession() keeps only expiresAt (already in ms). "
           "msUntilRefresh should use session.expiresAt.", cause=ids["js.fail"])
    read(t, repo, "coder", js, exp_at - 2, exp_at + 6, cause=ids["js.fail"])
    edit(t, repo, "coder", js, "session.claims.exp * 1000 - REFRESH_MARGIN_MS", "session.expiresAt - REFRESH_MARGIN_MS",
         cause=ids["js.fail"])
    run(t, "coder", "cd web && npm test", node_test([(n, True) for n in JS_TESTS]), 2.2, cause=ids["js.fail"])
    lint()
    commit(t, "coder", "feat(web): refresh the session a minute before expiry (#214)", [js, test_js])
    t.task_update("coder", "task-214-web-client", "done", note="4 tests pass")
    t.emit("planner", "phase_completed", {"phase": "fix-tests", "phase_id": ids["phase.fix"], "outcome": "cargo test, "
           "pytest and npm test all green after fixing the rotation bug, a stale test fixture and a bad field access"})


VERDICTS = ["looks right", "fine", "checked against the decisions; ok", "ok; covered by the new tests",
            "ok, naming follows the conventions", "correct, I traced the call path", "reads well",
            "nit: a one-line comment would help the next reader, not blocking"]


def review_diff(t, repo, paths, base, rev):
    """The reviewer reads the diff of each file, then the code around every hunk, and comments on it."""
    for path in paths:
        diff = repo.diff([path], base)
        git(t, "reviewer", ["diff", rev, "--", path], diff)
        for hunk in re.split(r"^(?=@@ )", diff, flags=re.M)[1:]:
            start, size = (int(x or 1) for x in re.match(r"@@ -\S+ \+(\d+)(?:,(\d+))? @@", hunk).groups())
            read(t, repo, "reviewer", path, max(1, start - 3), start + size + 3)
            lines = hunk.splitlines()[1:]
            added = [(i, line[1:].strip()) for i, line in enumerate(line for line in lines if line[:1] != "-")
                     if lines and line[:1] == "+" and len(line.strip()) > 8]
            if added:
                offset, text = max(added, key=lambda item: len(item[1]))
                t.say("reviewer", f"{path}:{start + offset}: `{text[:70]}`: {t.rng.choice(VERDICTS)}.", role="reviewer")
    old_names = symbols(Repo(base))
    for name in symbols(repo):
        if name not in old_names and t.rng.random() < 0.8:
            grep(t, repo, "reviewer", name)


def verify_all(t, repo, agent, **kw):
    """Every suite and linter, as CI runs them."""
    run(t, agent, "cargo test", cargo_test(t, RUST_TESTS + NEW_RUST_TESTS, secs=t.rng.uniform(9, 16)), 17, **kw)
    run(t, agent, "cargo clippy --all-targets -- -D warnings", ("    Checking auth-service v0.4.2 (/repo)\n"
        f"    Finished `dev` profile [unoptimized + debuginfo] target(s) in {t.rng.uniform(2, 6):.2f}s", 0), 6)
    run(t, agent, "cargo fmt --check", ("", 0), 0.5)
    run(t, agent, "cd clients/python && pytest --tb=native", pytest_run([(n, True) for n in PY_TESTS]), 1.9)
    run(t, agent, "cd clients/python && ruff check . && mypy authsvc", ("All checks passed!\n"
        "Success: no issues found in 3 source files", 0), 2.6)
    run(t, agent, "cd web && npm test", node_test([(n, True) for n in JS_TESTS]), 2.3)


def review(t, repo, ids):
    t.task = "task-214-review"
    ids["phase.review"] = t.emit("planner", "phase_started", {"phase": "review", "goal": "Independent review of "
                                 "the whole #214 change before merge"}, importance=0.6)
    verify_all(t, repo, "coder")
    git(t, "coder", ["push", "-u", "origin", "feat/214-token-refresh"], "To github.com:acme/auth-service.git\n"
        " * [new branch]      feat/214-token-refresh -> feat/214-token-refresh\nbranch 'feat/214-token-refresh' set up "
        "to track 'origin/feat/214-token-refresh'.")
    t.tool("coder", "bash", {"cmd": "gh pr create --fill --label auth"}, "https://github.com/acme/auth-service/pull/231")
    ci_fail = t.tool("coder", "bash", {"cmd": "gh pr checks 231 --watch"}, ci_checks(False), 1, 184_000, importance=0.6)
    refresh_sql = line_of(repo, "src/auth/refresh.rs", "sqlx::query(")
    t.tool("coder", "bash", {"cmd": "gh run view 8812 --log-failed | tail -20"}, "\n".join([
        "rust / sqlx-offline\tBuild\t2026-01-06T10:41:07.2Z    Compiling auth-service v0.4.2 (/home/runner/work)",
        "rust / sqlx-offline\tBuild\t2026-01-06T10:41:19.8Z error: `SQLX_OFFLINE=true` but there is no cached data "
        "for this query, run `cargo sqlx prepare` to update the query cache or unset `SQLX_OFFLINE`",
        f"rust / sqlx-offline\tBuild\t2026-01-06T10:41:19.8Z   --> src/auth/refresh.rs:{refresh_sql}:9",
        "rust / sqlx-offline\tBuild\t2026-01-06T10:41:19.8Z    |",
        "rust / sqlx-offline\tBuild\t2026-01-06T10:41:19.9Z error: could not compile `auth-service` (lib) due to 2 "
        "previous errors", "rust / sqlx-offline\tBuild\t2026-01-06T10:41:20.0Z ##[error]Process completed with exit "
        "code 101."]), 0, 2100, cause=ci_fail)
    t.note("coder", "CI builds with SQLX_OFFLINE=true; the two new queries in refresh.rs need .sqlx cache files.",
           cause=ci_fail)
    run(t, "coder", "cargo sqlx prepare", ("query data written to .sqlx in the current directory; please check this "
        "into version control", 0), 9.8, cause=ci_fail)
    git(t, "coder", ["status", "--short"], "?? .sqlx/query-3b1f0e9c4d2a7b8e6f5a4c3d2e1f0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f.json\n"
        "?? .sqlx/query-9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c8b7a6f5e4d3c2b1a0f9e8d.json")
    commit(t, "coder", "build: sqlx offline data for refresh_tokens queries (#214)", [".sqlx"])
    git(t, "coder", ["push"], "To github.com:acme/auth-service.git\n   6a1c2f0..b7e4d91  feat/214-token-refresh -> "
        "feat/214-token-refresh")
    t.tool("coder", "bash", {"cmd": "gh pr checks 231 --watch"}, ci_checks(True), 0, 201_000, cause=ci_fail)
    changed = [p for p in sorted(repo.files) if repo.files[p] != repo.base.get(p)]
    ids["handoff3"] = t.emit("coder", "handoff_sent", {
        "to": "reviewer", "task": "task-214-review",
        "summary": "Branch feat/214-token-refresh: login returns a refresh_token, POST /v1/token/refresh exchanges it "
                   "for a new access token and a rotated refresh token (refresh_access_token in src/auth/token.rs). "
                   "Refresh tokens live hashed in Postgres. Python client and dashboard refresh transparently.",
        "artifacts": changed, "decisions": [ids["d.postgres"], ids["d.rotation"], ids["d.pyrefresh"], ids["d.margin"]],
        "constraints": ["all suites green locally", "migration 0007 must run before the deploy"]}, importance=0.85)
    t.emit("reviewer", "handoff_received", {"from": "coder", "handoff_id": ids["handoff3"]}, cause=ids["handoff3"])
    t.emit("reviewer", "handoff_acknowledged", {"handoff_id": ids["handoff3"], "note": "reviewing file by file"})
    t.task_update("reviewer", "task-214-review", "in_progress")
    git(t, "reviewer", ["log", "--oneline", "main..HEAD"], "\n".join(
        f"{hashlib.sha1(m.encode()).hexdigest()[:7]} {m}" for m, _ in reversed(RUST_COMMITS)))
    git(t, "reviewer", ["diff", "--stat", "main...HEAD"], "\n".join(
        f" {p} | {abs(len(repo.files[p].splitlines()) - len(repo.base.get(p, '').splitlines()))} +" for p in changed))
    review_diff(t, repo, changed, repo.base, "main...HEAD")

    ids["paraphrase"] = t.say("reviewer", "Root cause of #214 checks out: users get signed out once the access token "
                              "expires, because nothing ever renewed it. With refresh_access_token the session now "
                              "outlives the access token.", role="reviewer", importance=0.6)
    t.emit("reviewer", "fact_retracted", {"subject": "TokenExpiredError", "predicate": "raised_by",
           "object": "TokenIssuer::verify_signature", "reason": "there is no verify_signature; TokenIssuer::verify "
           "raises it after decoding with validate_exp = false"}, importance=0.6, cause=ids["fact.raised_by"])
    t.fact("reviewer", "TokenExpiredError", "raised_by", "TokenIssuer::verify (src/auth/token.rs)", importance=0.6)
    t.fact("reviewer", "POST /v1/token/refresh", "returns", "a new access_token and a rotated refresh_token")
    t.fact("reviewer", "refresh_tokens", "stores", "sha256 of each refresh token, never the token itself")
    ids["reuse.gap"] = t.say("reviewer", f"Non-blocking: decision {ids['d.rotation']} says a replayed refresh token "
                             "revokes the whole session, but take() deletes the row, so a replay just looks unknown "
                             "and the newer token keeps working. Fine as a follow-up before production.",
                             role="reviewer", importance=0.7)
    for question, answer in REVIEW_QA:
        asked = t.say("reviewer", question, role="reviewer")
        t.say("coder", answer, role="coder", cause=asked)
    log_at = line_of(repo, "src/routes/session.rs", "tracing::info!(refresh_token")
    t.emit("reviewer", "memory_cited", {"item_id": ids["pref.logging.secrets"]})
    ids["blocker"] = t.say("reviewer", f"Blocking: src/routes/session.rs:{log_at} logs the raw refresh token "
                           "(tracing::info!(refresh_token = ...)). That breaks our logging.secrets convention and "
                           "would put live credentials in the log pipeline. Log the sid instead.", role="reviewer",
                           importance=0.9)
    t.task_update("reviewer", "task-214-review", "blocked", note="refresh token is logged in the refresh route")
    t.task_update("coder", "task-214-rust-refresh", "in_progress", note="fixing the token logging from review")
    read(t, repo, "coder", "src/routes/session.rs", log_at - 8, log_at + 2, cause=ids["blocker"])
    edit(t, repo, "coder", "src/routes/session.rs", "tracing::info!(refresh_token = %body.refresh_token, ",
         "tracing::info!(", cause=ids["blocker"])
    grep(t, repo, "coder", "refresh_token = %")
    grep(t, repo, "coder", "tracing::info!(", "src")
    run(t, "coder", "cargo test", cargo_test(t, RUST_TESTS + NEW_RUST_TESTS, secs=8.71), 10)
    commit(t, "coder", "fix(api): never log refresh tokens (#214)", ["src/routes/session.rs"])
    t.task_update("coder", "task-214-rust-refresh", "done")
    t.say("coder", "Fixed in the last commit: the refresh route logs nothing token-related now; grep for "
          "`refresh_token = %` is empty.", role="coder", cause=ids["blocker"])
    t.task_update("reviewer", "task-214-review", "in_progress", note="blocker fixed")
    ids["d.ttl"] = t.decide("planner", "Access token lifetime", "Lower access_ttl_secs from 900 to 600 once both "
                            "clients refresh", "With transparent refresh a shorter access token costs users nothing "
                            "and shrinks the window of a stolen token.", 0.8, cause=ids["paraphrase"])
    edit(t, repo, "coder", "src/config.rs", "    /// Lifetime of an access token. 900 s = 15 minutes.",
         "    /// Lifetime of an access token. 600 s = 10 minutes; clients refresh it.", cause=ids["d.ttl"])
    edit(t, repo, "coder", "src/config.rs", "            access_ttl_secs: 900,", "            access_ttl_secs: 600,")
    edit(t, repo, "coder", "docs/auth.md", "When the token expires the client must sign in\nagain; there is no "
         "refresh flow yet (see issue #214).", "Sign-in also returns a refresh token; `POST /v1/token/refresh`\n"
         "exchanges it for a new access token and a rotated refresh token (#214).")
    t.fact("coder", "auth-service", "access_token_ttl_seconds", "600", valid_from=rfc3339(t.now), importance=0.7,
           cause=ids["d.ttl"])
    t.emit("coder", "memory_cited", {"item_id": ids["fact.ttl900"]}, cause=ids["d.ttl"])
    verify_all(t, repo, "reviewer")
    run(t, "reviewer", "faketime -f '+0 x60' ./scripts/repro-214.sh --minutes 60", (REPRO_FIXED, 0), 61.5)
    t.decide("reviewer", "Merge #214", "Approve; squash-merge feat/214-token-refresh after migration 0007 is applied "
             "in staging", "All suites green, blocker fixed, session survives 60 minutes of activity in the repro.",
             0.7)
    git(t, "reviewer", ["merge", "--squash", "feat/214-token-refresh"], "Squash commit -- not updating HEAD\n"
        "Automatic merge went well; stopped before committing as requested")
    t.task_update("reviewer", "task-214-review", "done", note="approved")
    t.emit("planner", "phase_completed", {"phase": "review", "phase_id": ids["phase.review"],
                                          "outcome": "approved after one blocker (refresh token in logs)"})


def ci_checks(ok):
    jobs = ["rust / test", "rust / clippy", "rust / sqlx-offline", "python / pytest (3.11)", "python / pytest (3.12)",
            "python / ruff + mypy", "web / node --test", "web / eslint"]
    return "\n".join(f"{'X' if j.endswith('offline') and not ok else '✓'}  {j:<28} {1 + len(j) % 3}m{len(j) * 7 % 60:02d}s"
                     f"  https://github.com/acme/auth-service/actions/runs/88{12 if not ok else 19}" for j in jobs)


def rollout(t, repo, ids, env, migrations, hours):
    t.task = f"task-214-rollout-{env}"
    t.task_update("planner", t.task, "open", title=f"Deploy #214 to {env} and watch it for {hours} h")
    ids["phase.rollout"] = t.emit("planner", "phase_started", {"phase": "rollout", "goal": f"{env} deploy; no "
                                  f"unexpected sign-outs for {hours} h"}, importance=0.5)
    t.task_update("coder", t.task, "in_progress")
    run(t, "coder", f"sqlx migrate run --database-url ${env.upper()}_DATABASE_URL", ("\n".join(
        f"Applied {m} ({t.rng.uniform(5, 60):.3f}ms)" for m in migrations), 0), 1.6)
    run(t, "coder", f"kubectl -n {env} rollout status deploy/auth-service --timeout=5m", ("\n".join(
        f"Waiting for deployment \"auth-service\" rollout to finish: {i} of 3 updated replicas are available..."
        for i in range(3)) + '\ndeployment "auth-service" successfully rolled out', 0), 96)
    run(t, "coder", f"kubectl -n {env} logs deploy/auth-service --since=10m | grep refresh | tail -6", ("\n".join(
        f'{{"ts":"{rfc3339(t.now + timedelta(seconds=17 * i))}","level":"INFO","target":"auth_service::routes::session",'
        f'"msg":"access token refreshed","sid":"01KE9{i}H{7 * i % 10}Q2M8X0V5H3N6B1JD{i}K"}}' for i in range(6)), 0), 2.2)
    ok, unknown, reused, expired = 0, 0, 0, 412
    for minute in range(5, 5 + 60 * hours, 5):
        t.now += timedelta(seconds=t.rng.randint(250, 280))  # the watcher polls every five minutes
        ok += t.rng.randint(180, 260) if minute > 5 else 0
        expired = max(3, expired // 3 + t.rng.randint(0, 6))
        unknown += t.rng.randint(2, 9)
        reused += env == "production" and t.rng.random() < 0.1
        t.tool("coder", "bash", {"cmd": f"curl -s https://auth.{env}.internal/metrics | grep -E "
               "'auth_(refresh|session|unauthorized)'"}, "\n".join([
                   "# TYPE auth_refresh_total counter", f'auth_refresh_total{{result="ok"}} {ok}',
                   f'auth_refresh_total{{result="unknown"}} {unknown}', f'auth_refresh_total{{result="reused"}} {reused}',
                   "# TYPE auth_unauthorized_last_5m gauge", f'auth_unauthorized_last_5m{{reason="expired"}} {expired}',
                   "# TYPE auth_session_sign_ins_total counter",
                   f"auth_session_sign_ins_total {1840 + minute * 3}"]), 0, t.rng.randint(90, 300))
        if minute % 15 == 0:
            t.say("planner", f"t+{minute} min on {env}: {ok} refreshes, {reused} reuse detections, {expired} "
                  "expired-token 401s in the last five minutes (412 per five minutes before #214).", role="orchestrator", scope="shared")
        elif minute % 60 == 40:
            t.note("coder", f"t+{minute}: {unknown} refreshes with unknown tokens so far: tabs that slept past 14 "
                   "days or were signed in before the deploy; expected, they fall back to sign-in.")
    t.fact("coder", env, "expired_token_401s_per_5min", f"{expired} (was 412 before #214)", confidence=0.9,
           valid_from=rfc3339(t.now))
    t.task_update("coder", t.task, "done", note=f"{hours} h on {env} without unexpected sign-outs")
    t.emit("planner", "phase_completed", {"phase": "rollout", "phase_id": ids["phase.rollout"],
                                          "outcome": f"{env} healthy for {hours} h"})


REUSE_TEST = REFRESH_TEST.format(name="reuse_revokes_newer_token_in_family", ttl=900, body=(
    "        let pair = issuer.refresh_access_token(&store, &login.refresh_token).await.unwrap();\n"
    "        issuer.refresh_access_token(&store, &login.refresh_token).await.unwrap_err();\n"
    "        let after = issuer.refresh_access_token(&store, &pair.refresh_token).await;\n"
    "        assert!(matches!(after, Err(TokenError::Refresh(RefreshError::Unknown))));"))
TAKE_PG = '''let row: Option<(String, String)> = sqlx::query_as("DELETE FROM refresh_tokens WHERE token_sha256 = $1 \
AND expires_at > now() RETURNING sub, sid")
            .bind(hash(token))
            .fetch_optional(&self.pool)
            .await?;
        let (sub, sid) = row.ok_or(RefreshError::Unknown)?;'''
TAKE_REUSE = '''let row: Option<(String, String, bool)> = sqlx::query_as(
            "UPDATE refresh_tokens r SET used_at = coalesce(r.used_at, now()) FROM refresh_tokens old \\
             WHERE r.token_sha256 = $1 AND old.token_sha256 = r.token_sha256 AND r.expires_at > now() \\
             RETURNING r.sub, r.sid, old.used_at IS NOT NULL",
        )
        .bind(hash(token))
        .fetch_optional(&self.pool)
        .await?;
        let (sub, sid, reused) = row.ok_or(RefreshError::Unknown)?;
        if reused {
            sqlx::query("DELETE FROM refresh_tokens WHERE sid = $1").bind(&sid).execute(&self.pool).await?;
            return Err(RefreshError::Reused(sid));
        }'''


def harden(t, repo, ids):
    t.task = "task-214-reuse"
    t.task_update("planner", t.task, "open", title="Reusing a rotated refresh token revokes the whole session")
    ids["phase.harden"] = t.emit("planner", "phase_started", {"phase": "harden", "goal": "Implement reuse "
                                 "detection as decided: a replayed refresh token ends its session"}, importance=0.6)
    ids["handoff4"] = t.emit("planner", "handoff_sent", {
        "to": "coder", "task": t.task, "summary": "Reviewer found that replaying a rotated refresh token only fails "
        "itself; the newer token of the same session keeps working. Make reuse revoke every token of the sid.",
        "artifacts": ["src/auth/refresh.rs", "src/auth/token.rs"], "decisions": [ids["d.rotation"]],
        "constraints": ["regression test first, and it must fail before the fix", "keep the RefreshStore API"]},
        importance=0.8, cause=ids["reuse.gap"])
    t.emit("coder", "handoff_received", {"from": "planner", "handoff_id": ids["handoff4"]}, cause=ids["handoff4"])
    t.emit("coder", "handoff_acknowledged", {"handoff_id": ids["handoff4"], "note": "test first"})
    t.task_update("coder", t.task, "in_progress")
    t.emit("coder", "memory_cited", {"item_id": ids["pref.tests.regressions"]})
    base = dict(repo.files)
    survey(t, repo, "coder", ["src/auth/refresh.rs"], "take() deletes the row, so reuse looks like an unknown token",
           chunk=20)
    edit(t, repo, "coder", "src/auth/token.rs", "is_err());\n    }\n}\n", "is_err());\n    }\n" + REUSE_TEST + "}\n")
    NEW_RUST_TESTS.append("auth::token::tests::reuse_revokes_newer_token_in_family")
    fail = rust_failure(repo, NEW_RUST_TESTS[-1], "RefreshError::Unknown))));", [
        "assertion failed: matches!(after, Err(TokenError::Refresh(RefreshError::Unknown)))"])
    ids["reuse.fail"] = run(t, "coder", "RUST_BACKTRACE=1 cargo test", cargo_test(t, RUST_TESTS + NEW_RUST_TESTS,
                            fail, secs=11.06), 12.3, importance=0.6)
    t.note("coder", "regression test fails as expected: after a replay the newer refresh token still works.",
           cause=ids["reuse.fail"])
    t.decide("coder", "Refresh token reuse detection", "Mark tokens used (used_at) instead of deleting them; a "
             "second use deletes every token of the sid and returns RefreshError::Reused",
             "Deleting on use made a replay indistinguishable from an unknown token, so the session could not be "
             "revoked.", 0.7, cause=ids["reuse.fail"])
    write(t, repo, "coder", "migrations/0008_refresh_tokens_used_at.sql", "-- 0008: remember used refresh tokens "
          "so that a replay can be detected (#214).\nALTER TABLE refresh_tokens ADD COLUMN used_at TIMESTAMPTZ;\n")
    edit(t, repo, "coder", "src/auth/refresh.rs", "    Unknown,\n", "    Unknown,\n    #[error(\"refresh token "
         "reused; session {0} revoked\")]\n    Reused(String),\n")
    edit(t, repo, "coder", "src/auth/refresh.rs", TAKE_PG, TAKE_REUSE, cause=ids["reuse.fail"])
    check(t)
    run(t, "coder", "sqlx migrate run", ("Applied 8/migrate refresh tokens used at (6.114ms)", 0), 0.9)
    run(t, "coder", "cargo sqlx prepare", ("query data written to .sqlx in the current directory; please check this "
        "into version control", 0), 9.1)
    run(t, "coder", "cargo test", cargo_test(t, RUST_TESTS + NEW_RUST_TESTS, secs=10.4), 11.8, cause=ids["reuse.fail"])
    commit(t, "coder", "fix(auth): reusing a rotated refresh token revokes the session (#214)",
           ["migrations/0008_refresh_tokens_used_at.sql", "src/auth/refresh.rs", "src/auth/token.rs", ".sqlx"])
    t.say("coder", "reviewer: reuse detection is in (one commit on top). Replaying a rotated token now revokes the "
          "whole sid; regression test reuse_revokes_newer_token_in_family failed before the fix.", role="coder")
    review_diff(t, repo, [p for p in sorted(repo.files) if repo.files[p] != base.get(p)], base, "HEAD~1..HEAD")
    verify_all(t, repo, "reviewer")
    t.fact("reviewer", "refresh token reuse", "revokes", "every refresh token of the same session (sid)",
           valid_from=rfc3339(t.now), importance=0.7)
    t.task_update("reviewer", t.task, "done", note="reviewed; suites green")
    t.emit("planner", "phase_completed", {"phase": "harden", "phase_id": ids["phase.harden"],
                                          "outcome": "reuse of a rotated refresh token now revokes the session"})




def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", default=str(Path(__file__).with_name("trajectory.jsonl")))
    args = parser.parse_args()
    t = Trajectory()
    tell_story(t, Repo(SOURCES))
    Path(args.output).write_text("\n".join(t.lines) + "\n", encoding="utf-8")
    print(f"wrote {len(t.lines)} events to {args.output}")


if __name__ == "__main__":
    main()
