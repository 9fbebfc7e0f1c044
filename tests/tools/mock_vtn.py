#!/usr/bin/env python3
"""mock_vtn.py — a small OpenADR 3 VTN for pfi's tests (standard library only).

    python3 mock_vtn.py --port-file F --state DIR [--version 3.1.1|3.0.1]
                        [--strict-reports] [--olrs-reports] [--strict]
                        [--page-limit 50] [--over-limit reject|cap]
                        [--order name|olrs] [--no-auth]
                        [--client-id ID --client-secret S] [--expires-in S]
                        [--bad-token-status 403|401]
                        [--echo-challenge query|path] [--no-webhooks 404|405|501]
                        [--vens-refuse 403|409 [--ven-targets T ...]]
                        [--rate-limit K [--retry-after V]] [--short-pages K]
                        [--expires-in-string] [--local-timestamps]
    python3 mock_vtn.py --self-test

It binds 127.0.0.1 port 0, writes the port to F (atomically) and serves the
requests pfi-controller's VEN makes (src/runtime/vtn_client.c,
src/daemon/controller/ctl_vtn.c) the way openleadr-rs's VTN answers them
(OpenLEADR/openleadr-rs, Apache-2.0 OR MIT; paths below are in that
repository), so a test can put pfi against a VTN that behaves like a real one
without PostgreSQL or Rust. Nothing of openleadr-rs is copied; each behaviour
cites the file it was read from. Where the specification
(tests/openadr3/spec/{3.1.1,3.0.1}/openadr3.yaml) and openleadr-rs differ,
the comment says which one is followed and why.

State, under DIR (created when missing; the test edits it while we run):

  events/*.json        the VTN's events, one object a file, served verbatim
                       (byte for byte, so wire forms such as "2.0", "+00:00"
                       or "P0Y0M0DT1H0M0S" reach the VEN as written), sorted
                       by file name, re-read at every request: add a file to
                       model a creation at the VTN, remove it to model a
                       deletion (GET /events/{id} then answers 404)
  programs/*.json      programs (GET /programs, /programs/{id}), e.g. with
                       payloadDescriptors that declare the events' units
  fail_skip            integers, one a line: a GET /events page whose skip is
                       one of them answers 500 (a poll failing half-way)
  revoked              tokens, one a line, or "*": those tokens (with "*",
                       every token issued before the VTN first saw this
                       version of the file) are refused
  vens/, subscriptions/ what POST /vens and POST /subscriptions created
  reports/NNN.json     each accepted POST /reports body, verbatim (001, ...)
  refused/NNN.json     each refused one, verbatim (the reason is logged)

Every request is logged to stderr, one line: METHOD TARGET -> STATUS note.

Behaviours and their sources:

  * Problems (openleadr-vtn/src/error.rs, openleadr-wire/src/problem.rs):
    {"type": "about:blank", "title": "<code> <reason>", "status": <code>,
    "detail"?, "instance": "<uuid>"} with Content-Type application/json (not
    application/problem+json; the spec also declares application/json); a
    401 carries WWW-Authenticate: Bearer realm="VTN" (error.rs, commit
    "401 response includes WWW-Authenticate header").
  * Authentication (openleadr-vtn/src/jwt.rs, impl FromRequestParts for
    User): no "Authorization: Bearer" header -> 401; a token the VTN does
    not accept (unknown, expired, revoked) -> 403 "Invalid authentication
    token provided" (--bad-token-status 401 makes it a 401).
  * POST /auth/token (openleadr-vtn/src/api/auth.rs, token): a form
    (application/x-www-form-urlencoded, else 415), grant_type
    client_credentials (else 400 {"error": "unsupported_grant_type"}),
    client_id/client_secret in the body or HTTP Basic (both: 400
    invalid_request; neither or wrong: 401 invalid_client); answers
    {"access_token", "token_type": "Bearer", "expires_in": 2592000} (30 days).
  * GET /auth/server (openleadr-vtn/src/state.rs, auth_server_handler):
    {"tokenURL": ".../auth/token"}, no token needed.
  * GET /events (openleadr-vtn/src/api/event.rs, QueryParams): programID
    (an objectID), targets (3.1; 3.0.1: targetType + targetValues), skip
    (default 0, >= 0) and limit (default 50, 1..=50); a limit of 0 or over 50
    is a 400, not capped (--over-limit cap caps instead; the spec allows
    0..50). Order: by file name (tests choose it); --order olrs sorts as
    openleadr-vtn/src/data_source/postgres/event.rs does: priority ascending,
    no priority last, then createdDateTime newest first. A targets filter
    keeps the events that share a target with it; an event without targets
    does not match a filter (postgres/event.rs: e.targets && $2).
  * GET /events/{id}, /programs/{id}: 404 problem (no detail) when absent
    (error.rs AppError::NotFound); an id that is not an objectID is a 400.
  * POST /vens (openleadr-vtn/src/api/ven.rs add, openleadr-wire/src/ven.rs):
    3.1 needs objectType VEN_VEN_REQUEST (a VEN's token); a second VEN of the
    same venName or the same client is 409 (migrations: ven_ven_name_uindex,
    ven_client_id_unique). 3.1 answers carry no objectType (as openleadr-rs),
    3.0.1 answers do.
  * POST /subscriptions (openleadr-vtn/src/api/subscription.rs,
    openleadr-wire/src/subscription.rs): clientName 1..128, objectOperations
    1..15. Like openleadr-rs the mock never calls a callbackUrl (openleadr-rs
    notifies over MQTT and WebSocket only).
  * POST /reports: without flags any JSON object is accepted (201).
    --strict-reports: the version's schema (3.1.1 reportRequest: eventID,
    clientName, resources; 3.0.1 report: and programID), objectIDs, each
    interval's int32 id, every intervalPeriod with an RFC 3339 start (3.0.1's
    schema; openleadr-rs's IntervalPeriod for 3.1, openleadr-wire/src/
    interval.rs), durations matching the spec's pattern, payload types
    strings of 1..128, report payloadDescriptors with objectType
    REPORT_PAYLOAD_DESCRIPTOR (required in 3.1.1): a 400 problem naming each
    failure. --olrs-reports adds what openleadr-rs's database refuses: a
    reportName already used (unique index report_report_name_uindex,
    migrations/20240826084440_initial_scheme.sql) and an eventID with no
    event (foreign key report.event_id): 409 problems. An accepted report is
    answered 201 with the report, its id, timestamps, objectType REPORT and
    clientID (openleadr-wire/src/report.rs).

Other VTNs' behaviours, each an option (issue 42; sources named beside each):

  * --echo-challenge query|path: before a subscription is stored, the VTN
    GETs each callbackUrl with a random value V and refuses the
    subscription (400) unless the answer is 200 with V as its body. query:
    {callbackUrl}?echo=V, the OpenADR 3.1.1 Definition's "Webhooks" section
    (the VTN MUST verify the callback; the VEN MUST echo); path:
    {callbackUrl}/echo?echo=V, as the OpenADR Alliance's reference VTN
    (oadr3-org/openadr3-vtn-reference-implementation) asks.
  * --no-webhooks 404|405|501: a VTN without webhooks (3.1.1 says WEBHOOK
    "Currently MUST be true"; some VTNs notify over MQTT only): GET and POST
    /subscriptions answer that status and GET /notifiers {"WEBHOOK": false},
    until the file DIR/webhooks_on exists.
  * --vens-refuse 403|409: POST /vens answers that status (a VEN's token may
    not create one, or one exists under a name the VTN's business logic
    chose, as the Australian openleadr-vtn deployment recorded in
    grid-coordination/openadr3-ven-hass shows); the VTN holds one VEN object
    named bl-ven-1 (GET /vens?venName=OURS finds nothing; GET /vens lists it,
    the one VEN a VEN's token may see: 3.1.1 Definition, "Object Privacy").
    --ven-targets T (repeatable): its targets, the business logic's opaque
    grants (User Guide 8.13 "target hiding"): GET /events then serves only
    the events without targets or sharing one with them.
  * --rate-limit K: the first K GET /events answer 429 with Retry-After
    (--retry-after V: seconds, or an HTTP date as RFC 9110 10.2.3 allows;
    default 2), RFC 6585 4.
  * --short-pages K: at most K events a page whatever the limit asked (a
    VTN whose own largest page is smaller: the listing is not over).
  * --report-delay S: each POST /reports is stored at once and answered S
    seconds later (a slow VTN, or a network that loses the answer: the VEN
    cannot know whether its report was taken). GET /reports filters by
    programID, eventID and clientName, as openleadr-vtn's QueryParams
    (openleadr-vtn/src/api/report.rs) and the 3.1.1 spec's parameters.
  * --expires-in-string: the token's expires_in as a string ("3600"), as
    one VTN was seen to send it (RFC 6749 5.1 says a number).
  * --local-timestamps: createdDateTime / modificationDateTime of what the
    VTN creates written without an offset ("2026-03-20 14:58:51"), as the
    reference VTN stamps them. (Events are served verbatim: a test writes
    such an event's file itself.)
"""

import argparse
import base64
import datetime as dt
import http.server
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
import uuid

OBJECT_ID = re.compile(r"^[a-zA-Z0-9_-]{1,128}$")  # spec schema objectID, 1..128
# the spec's duration pattern (openadr3.yaml, schemas: duration)
DURATION = re.compile(r"^(-?)P(?=\d|T\d)(?:(\d+)Y)?(?:(\d+)M)?(?:(\d+)([DW]))?"
                      r"(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$")
RFC3339 = re.compile(r"^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?"
                     r"([Zz]|[+-]\d{2}:\d{2})$")
REASONS = {200: "OK", 201: "Created", 400: "Bad Request", 401: "Unauthorized",
           403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed", 409: "Conflict",
           415: "Unsupported Media Type", 429: "Too Many Requests", 500: "Internal Server Error",
           501: "Not Implemented"}
OBJECT_TYPES = {"PROGRAM", "EVENT", "REPORT", "SUBSCRIPTION", "VEN", "RESOURCE",
                "RESOURCE_GROUP"}


LOCAL_TIMESTAMPS = False  # --local-timestamps


def now_rfc3339():
    """A VTN timestamp as openleadr-rs writes one (chrono to_rfc3339 of a
    PostgreSQL now(): microseconds, +00:00); with --local-timestamps as the
    reference VTN writes one (no offset, a space)."""
    t = dt.datetime.now(dt.timezone.utc)
    if LOCAL_TIMESTAMPS:
        return t.strftime("%Y-%m-%d %H:%M:%S")
    return t.isoformat(timespec="microseconds")


def is_rfc3339(s):
    m = RFC3339.match(s) if isinstance(s, str) else None
    if not m:
        return False
    try:
        dt.datetime(*(int(m.group(i)) for i in range(1, 7)))
    except ValueError:
        return False
    return True


class Refusal(Exception):
    """An answer other than success: status, a problem's detail."""

    def __init__(self, status, detail=None, headers=None):
        super().__init__(detail)
        self.status, self.detail, self.headers = status, detail, headers or {}


# ---- the schema check of a REPORT (--strict-reports) ---------------------

def _str_ok(v, lo=1, hi=128):
    return isinstance(v, str) and lo <= len(v) <= hi


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def check_period(p, where, errs):
    if not isinstance(p, dict):
        errs.append("%s: expected an object" % where)
        return
    if "start" not in p:
        errs.append("%s.start: required" % where)
    elif not is_rfc3339(p["start"]):
        errs.append("%s.start: expected an RFC 3339 date-time, got %s"
                    % (where, json.dumps(p["start"])[:60]))
    for k in ("duration", "randomizeStart"):
        if k in p and not (isinstance(p[k], str) and DURATION.match(p[k])):
            errs.append("%s.%s: expected an ISO 8601 duration of the spec's pattern, got %s"
                        % (where, k, json.dumps(p[k])[:60]))


def check_values_map(m, where, errs):
    if not isinstance(m, dict):
        errs.append("%s: expected an object" % where)
        return
    if not _str_ok(m.get("type")):
        errs.append("%s.type: required, a string of 1..128 characters" % where)
    vals = m.get("values")
    if not isinstance(vals, list):
        errs.append("%s.values: required, an array" % where)
        return
    for i, v in enumerate(vals):
        point = isinstance(v, dict) and _is_num(v.get("x")) and _is_num(v.get("y"))
        if not (isinstance(v, (str, bool)) or _is_num(v) or point):
            errs.append("%s.values[%d]: expected a number, string, boolean or point" % (where, i))


def check_report(o, version):
    """The failures of a POST /reports body against the version's schema
    (3.1.1 reportRequest, 3.0.1 report), as 'path: why' strings."""
    if not isinstance(o, dict):
        return ["the body: expected a JSON object"]
    errs = []
    required = ["eventID", "clientName", "resources"]
    if version == "3.0.1":
        required.insert(0, "programID")
    for k in required:
        if k not in o:
            errs.append("%s: required" % k)
    for k in ("eventID", "programID"):
        if k in o and not (isinstance(o[k], str) and OBJECT_ID.match(o[k])):
            if k == "programID" and version != "3.0.1":
                continue  # not a property of a 3.1 reportRequest
            errs.append("%s: expected an objectID (1..128 of [a-zA-Z0-9_-]), got %s"
                        % (k, json.dumps(o[k])[:60]))
    if version == "3.0.1" and "objectType" in o and o["objectType"] != "REPORT":
        errs.append("objectType: expected REPORT")
    if "clientName" in o and not _str_ok(o["clientName"]):
        errs.append("clientName: expected a string of 1..128 characters")
    if "reportName" in o and not (o["reportName"] is None or isinstance(o["reportName"], str)):
        errs.append("reportName: expected a string or null")
    pds = o.get("payloadDescriptors")
    if pds is not None:
        if not isinstance(pds, list):
            errs.append("payloadDescriptors: expected an array or null")
        else:
            for i, d in enumerate(pds):
                w = "payloadDescriptors[%d]" % i
                if not isinstance(d, dict):
                    errs.append("%s: expected an object" % w)
                    continue
                if not _str_ok(d.get("payloadType")):
                    errs.append("%s.payloadType: required, a string of 1..128 characters" % w)
                if version == "3.1.1" and "objectType" not in d:
                    errs.append("%s.objectType: required (REPORT_PAYLOAD_DESCRIPTOR)" % w)
                elif "objectType" in d and d["objectType"] != "REPORT_PAYLOAD_DESCRIPTOR":
                    errs.append("%s.objectType: expected REPORT_PAYLOAD_DESCRIPTOR, got %s"
                                % (w, json.dumps(d["objectType"])[:60]))
                for k in ("readingType", "units"):
                    if d.get(k) is not None and not _str_ok(d[k]):
                        errs.append("%s.%s: expected a string or null" % (w, k))
                if d.get("accuracy") is not None and not _is_num(d["accuracy"]):
                    errs.append("%s.accuracy: expected a number or null" % w)
                c = d.get("confidence")
                if c is not None and not (_is_int(c) and 0 <= c <= 100):
                    errs.append("%s.confidence: expected an integer 0..100 or null" % w)
    res = o.get("resources")
    if "resources" in o and not isinstance(res, list):
        errs.append("resources: expected an array")
        res = []
    for r, x in enumerate(res or []):
        w = "resources[%d]" % r
        if not isinstance(x, dict):
            errs.append("%s: expected an object" % w)
            continue
        if not _str_ok(x.get("resourceName")):
            errs.append("%s.resourceName: required, a string of 1..128 characters" % w)
        if "intervalPeriod" in x:
            check_period(x["intervalPeriod"], w + ".intervalPeriod", errs)
        ivs = x.get("intervals")
        if not isinstance(ivs, list):
            errs.append("%s.intervals: required, an array" % w)
            continue
        for i, iv in enumerate(ivs):
            wi = "%s.intervals[%d]" % (w, i)
            if not isinstance(iv, dict):
                errs.append("%s: expected an object" % wi)
                continue
            if "id" not in iv:
                errs.append("%s.id: required" % wi)
            elif not (_is_int(iv["id"]) and -2**31 <= iv["id"] < 2**31):
                errs.append("%s.id: expected an int32 integer, got %s"
                            % (wi, json.dumps(iv["id"])[:40]))
            if "intervalPeriod" in iv:
                check_period(iv["intervalPeriod"], wi + ".intervalPeriod", errs)
            pls = iv.get("payloads")
            if not isinstance(pls, list):
                errs.append("%s.payloads: required, an array" % wi)
                continue
            for k, p in enumerate(pls):
                check_values_map(p, "%s.payloads[%d]" % (wi, k), errs)
    return errs


# ---- the server ------------------------------------------------------------

class Vtn:
    """Configuration and the little state kept in memory (tokens)."""

    def __init__(self, args):
        self.a = args
        self.dir = args.state
        self.lock = threading.Lock()
        self.tokens = {}  # token -> (client_id, issued, expires)
        self.revoke_seen = (None, 0.0)  # DIR/revoked: (its version, when first seen)
        self.port = 0
        self.limited = 0  # GET /events answered 429 so far (--rate-limit)
        for sub in ("events", "programs", "vens", "subscriptions", "reports", "refused"):
            os.makedirs(os.path.join(self.dir, sub), exist_ok=True)
        if args.vens_refuse:  # the VEN object the business logic made
            ts = now_rfc3339()
            ven = {"id": "bl-ven-1-id", "createdDateTime": ts, "modificationDateTime": ts,
                   "venName": "bl-ven-1", "targets": list(args.ven_targets or [])}
            if args.version == "3.0.1":
                ven["objectType"] = "VEN"
                ven.pop("targets")
            self.store("vens", ven, name=ven["id"])

    def path(self, *p):
        return os.path.join(self.dir, *p)

    def objects(self, sub):
        """[(file name, raw text, parsed or None)] of DIR/sub/*.json, by name."""
        out = []
        d = self.path(sub)
        for name in sorted(os.listdir(d)):
            if not name.endswith(".json"):
                continue
            try:
                with open(os.path.join(d, name), "rb") as f:
                    raw = f.read().decode("utf-8").strip()
            except (FileNotFoundError, UnicodeDecodeError):
                continue  # removed under our feet: the deletion wins
            try:
                obj = json.loads(raw)
            except ValueError:
                obj = None  # served as it is: a VTN that sends garbage
            out.append((name, raw, obj))
        return out

    def find(self, sub, oid):
        for name, raw, obj in self.objects(sub):
            if (isinstance(obj, dict) and obj.get("id") == oid) or name[:-5] == oid:
                return raw, obj
        return None

    def store(self, sub, obj, raw=None, name=None):
        """Write an object (or raw bytes) to DIR/sub/NAME.json atomically;
        NAME defaults to the next number (001, 002, ...)."""
        with self.lock:
            if name is None:  # one past the highest number there
                nums = [int(f[:-5]) for f in os.listdir(self.path(sub))
                        if f.endswith(".json") and f[:-5].isdigit()]
                name = "%03d" % (max(nums, default=0) + 1)
            p = self.path(sub, name + ".json")
            with open(p + ".tmp", "wb") as f:
                f.write(raw if raw is not None else json.dumps(obj, indent=1).encode())
            os.replace(p + ".tmp", p)
        return name

    def issue(self, client):
        tok = "mock-" + secrets.token_hex(16)
        t = time.time()
        with self.lock:
            self.tokens[tok] = (client, t, t + self.a.expires_in)
        return tok

    def client_of(self, tok):
        """The client a token was issued to, or None when it is not accepted."""
        with self.lock:
            ent = self.tokens.get(tok)
        if not ent or time.time() >= ent[2]:
            return None
        try:
            st = os.stat(self.path("revoked"))
            with open(self.path("revoked")) as f:
                lines = [ln.strip() for ln in f]
        except FileNotFoundError:
            return ent[0]
        with self.lock:  # "*": the tokens issued before we saw this version
            if self.revoke_seen[0] != (st.st_mtime_ns, st.st_size, st.st_ino):
                self.revoke_seen = ((st.st_mtime_ns, st.st_size, st.st_ino), time.time())
            seen = self.revoke_seen[1]
        if tok in lines or ("*" in lines and ent[1] < seen):
            return None
        return ent[0]


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "mock-vtn"
    vtn = None  # set by serve()

    # -- plumbing --

    def log_message(self, fmt, *args):  # the one-line log is ours
        pass

    def send(self, status, body, ctype="application/json", headers=None, note=""):
        data = body if isinstance(body, bytes) else (
            body.encode() if isinstance(body, str) else json.dumps(body).encode())
        self.send_response(status, REASONS.get(status))
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
        sys.stderr.write("mock_vtn: %s %s -> %d%s\n" % (
            self.command, self.path, status, (" " + note) if note else ""))
        sys.stderr.flush()

    def problem(self, status, detail=None, headers=None):
        """openleadr-vtn/src/error.rs IntoResponse: a Problem as JSON."""
        p = {"type": "about:blank", "title": "%d %s" % (status, REASONS.get(status, "")),
             "status": status}
        if detail is not None:
            p["detail"] = detail
        p["instance"] = str(uuid.uuid4())
        h = dict(headers or {})
        if status == 401:
            h.setdefault("WWW-Authenticate", 'Bearer realm="VTN"')
        self.send(status, p, headers=h, note=detail or "")

    def read_body(self):
        """The whole request body, read before anything is answered (an
        unread body would be taken for the next request on the connection)."""
        try:
            n = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            n = 0
        self._body = self.rfile.read(n) if n > 0 else b""
        self._raw = None  # a POST body worth keeping once it is JSON

    def body(self):
        return self._body

    def json_body(self):
        """axum's Json extractor: application/json (or +json) else 415; a body
        that does not parse is a 400 (error.rs From<JsonRejection>)."""
        raw = self.body()
        self._raw = raw
        ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        if not (ctype == "application/json" or ctype.endswith("+json")):
            raise Refusal(415, "Expected request with `Content-Type: application/json`")
        try:
            return raw, json.loads(raw.decode("utf-8"))
        except (ValueError, UnicodeDecodeError) as e:
            raise Refusal(400, "Failed to parse the request body as JSON: %s" % e)

    def query(self):
        return urllib.parse.parse_qsl(urllib.parse.urlsplit(self.path).query,
                                      keep_blank_values=True)

    def authorize(self):
        """The client id of the request's bearer token (jwt.rs User)."""
        if self.vtn.a.no_auth:
            return "anonymous"
        h = self.headers.get("Authorization") or ""
        scheme, _, tok = h.partition(" ")
        if scheme.lower() != "bearer" or not tok.strip():
            raise Refusal(401, "Authorization via Bearer token in Authorization header required")
        client = self.vtn.client_of(tok.strip())
        if client is None:
            raise Refusal(self.vtn.a.bad_token_status, "Invalid authentication token provided")
        return client

    # -- dispatch --

    ROUTES = [
        ("GET", r"/auth/server", "auth_server"),
        ("POST", r"/auth/token", "auth_token"),
        ("GET", r"/programs", "programs_list"),
        ("GET", r"/programs/([^/]*)", "program_get"),
        ("GET", r"/events", "events_list"),
        ("GET", r"/events/([^/]*)", "event_get"),
        ("GET", r"/vens", "vens_list"),
        ("POST", r"/vens", "ven_add"),
        ("GET", r"/vens/([^/]*)", "ven_get"),
        ("GET", r"/subscriptions", "subscriptions_list"),
        ("POST", r"/subscriptions", "subscription_add"),
        ("GET", r"/reports", "reports_list"),
        ("POST", r"/reports", "report_add"),
        ("GET", r"/notifiers", "notifiers"),
    ]

    def dispatch(self):
        self.read_body()
        path = urllib.parse.urlsplit(self.path).path
        allowed = []
        for method, pat, fn in self.ROUTES:
            m = re.fullmatch(pat, path)
            if not m:
                continue
            if method != self.command:
                allowed.append(method)
                continue
            try:
                args = [urllib.parse.unquote(g) for g in m.groups()]
                if fn not in ("auth_server", "auth_token"):
                    self.client = self.authorize()
                return getattr(self, fn)(*args)
            except Refusal as r:
                if self.command == "POST" and path == "/reports" and self._raw is not None:
                    self.vtn.store("refused", None, raw=self._raw)
                return self.problem(r.status, r.detail, r.headers)
            except Exception as e:  # a bug of ours: say so, keep serving
                import traceback
                traceback.print_exc()
                return self.problem(500, "mock_vtn: %s: %s" % (type(e).__name__, e))
        if allowed:  # state.rs method_not_allowed layer
            return self.problem(405, "See allow headers for allowed methods",
                                {"Allow": ", ".join(allowed)})
        return self.problem(404)  # state.rs handler_404

    def do_GET(self):
        self.dispatch()

    def do_POST(self):
        self.dispatch()

    def do_PUT(self):
        self.dispatch()

    def do_DELETE(self):
        self.dispatch()

    # -- auth --

    def auth_server(self):
        self.send(200, {"tokenURL": "http://127.0.0.1:%d/auth/token" % self.vtn.port})

    def oauth_error(self, status, error, description):
        """openleadr-wire/src/oauth.rs OAuthError, auth.rs ResponseOAuthError."""
        h = {"WWW-Authenticate": 'Bearer realm="VTN"'} if status == 401 else {}
        self.send(status, {"error": error, "error_description": description}, headers=h,
                  note=error)

    def auth_token(self):
        raw = self.body()
        ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        if ctype != "application/x-www-form-urlencoded":
            raise Refusal(415, "Form requests must have `Content-Type: "
                               "application/x-www-form-urlencoded`")
        try:
            form = dict(urllib.parse.parse_qsl(raw.decode("utf-8"), keep_blank_values=True,
                                               strict_parsing=bool(raw)))
        except (ValueError, UnicodeDecodeError) as e:
            raise Refusal(400, "Failed to deserialize form body: %s" % e)
        if "grant_type" not in form:
            raise Refusal(400, "Failed to deserialize form body: missing field `grant_type`")
        if form["grant_type"] != "client_credentials":
            return self.oauth_error(400, "unsupported_grant_type",
                                    "Only client_credentials grant type is supported")
        basic = None
        h = self.headers.get("Authorization") or ""
        if h[:6].lower() == "basic ":
            try:
                u, _, p = base64.b64decode(h[6:].strip()).decode("utf-8").partition(":")
                basic = (urllib.parse.unquote(u), urllib.parse.unquote(p))
            except (ValueError, UnicodeDecodeError):
                basic = None
        in_body = "client_id" in form or "client_secret" in form
        if basic and in_body:
            return self.oauth_error(400, "invalid_request",
                                    "Both header and body authentication provided")
        cid, secret = basic or (form.get("client_id", ""), form.get("client_secret", ""))
        if not basic and not in_body:
            return self.oauth_error(401, "invalid_client", "No valid authentication data "
                                    "provided, client_id and client_secret required")
        a = self.vtn.a
        good = cid != "" and (a.client_id is None or cid == a.client_id) and \
            (a.client_secret is None or secret == a.client_secret)
        if not good:
            return self.oauth_error(401, "invalid_client", "Invalid client_id or client_secret")
        tok = self.vtn.issue(cid)
        exp = str(a.expires_in) if a.expires_in_string else a.expires_in
        self.send(200, {"access_token": tok, "token_type": "Bearer",
                        "expires_in": exp}, note="token for " + cid)

    # -- lists --

    def page(self):
        """skip and limit as openleadr-vtn/src/api/event.rs QueryParams
        validates them: integers, skip >= 0, 1 <= limit <= 50 (a 400, or
        capped with --over-limit cap)."""
        skip, limit = 0, min(50, self.vtn.a.page_limit)
        for k, v in self.query():
            if k in ("skip", "limit"):
                if not re.fullmatch(r"[+-]?\d{1,18}", v):
                    raise Refusal(400, "Failed to deserialize query string: %s: invalid digit "
                                       "found in string" % k)
                if k == "skip":
                    skip = int(v)
                else:
                    limit = int(v)
        if skip < 0:
            raise Refusal(400, "skip: Validation error: range (min 0)")
        top = self.vtn.a.page_limit
        if limit < 1 or limit > top:
            if self.vtn.a.over_limit == "cap":
                limit = max(1, min(limit, top))
            else:
                raise Refusal(400, "limit: Validation error: range (1..=%d)" % top)
        return skip, limit

    def id_param(self, k):
        vals = [v for q, v in self.query() if q == k]
        if vals and not OBJECT_ID.match(vals[-1]):
            raise Refusal(400, "Failed to deserialize query string: %s: identifier "
                               "contains characters besides [a-zA-Z0-9_-]" % k)
        return vals[-1] if vals else None

    def send_list(self, items, what):
        """A JSON array of the items' raw texts (verbatim)."""
        self.send(200, "[" + ",\n".join(raw for raw, _ in items) + "]",
                  note="(%d %s)" % (len(items), what))

    # -- programs --

    def programs_list(self):
        skip, limit = self.page()
        items = [(raw, obj) for _, raw, obj in self.vtn.objects("programs")]
        self.send_list(items[skip:skip + limit], "programs")

    def program_get(self, pid):
        self.get_one("programs", pid)

    def get_one(self, sub, oid):
        if not OBJECT_ID.match(oid):
            # axum's Path rejection (not an AppError): 400, plain text
            return self.send(400, "Invalid URL: Cannot parse `%s`: not an objectID" % oid[:60],
                             ctype="text/plain; charset=utf-8")
        hit = self.vtn.find(sub, oid)
        if hit is None:
            raise Refusal(404)
        self.send(200, hit[0])

    # -- events --

    def events_list(self):
        a = self.vtn.a
        pid = self.id_param("programID")
        q = self.query()
        if a.version == "3.0.1":
            ttype = next((v for k, v in reversed(q) if k == "targetType"), None)
            tvals = [v for k, v in q if k == "targetValues"]
        else:
            ttype, tvals = None, [v for k, v in q if k == "targets"]
            for v in tvals:
                if not 1 <= len(v) <= 128:
                    raise Refusal(400, "Failed to deserialize query string: targets: "
                                       "string length %d outside of allowed range 1..=128"
                                  % len(v))
        skip, limit = self.page()
        if a.short_pages:
            limit = min(limit, a.short_pages)
        with self.vtn.lock:
            limited = self.vtn.limited < a.rate_limit
            self.vtn.limited += limited
        if limited:  # RFC 6585 4: 429 Too Many Requests, with Retry-After
            raise Refusal(429, "Too many requests", {"Retry-After": a.retry_after})
        try:
            with open(self.vtn.path("fail_skip")) as f:
                fail = {int(ln) for ln in f if ln.strip().lstrip("-").isdigit()}
        except FileNotFoundError:
            fail = set()
        if skip in fail:  # error.rs AppError::Sql
            raise Refusal(500, "A database error occurred")
        items = []
        for name, raw, obj in self.vtn.objects("events"):
            if isinstance(obj, dict):
                if pid is not None and obj.get("programID") != pid:
                    continue
                if tvals and not self.targeted(obj.get("targets"), ttype, tvals):
                    continue
                if a.ven_targets and obj.get("targets") and \
                        not self.targeted(obj.get("targets"), None, a.ven_targets):
                    continue  # User Guide 8.13: only the VEN's granted targets
            items.append((raw, obj))
        if a.order == "olrs":
            items.sort(key=olrs_order)
        self.send_list(items[skip:skip + limit], "events, skip %d limit %d" % (skip, limit))

    @staticmethod
    def targeted(targets, ttype, tvals):
        """Whether an event's targets meet a filter: one in common (3.1
        strings; 3.0.1 valuesMaps of targetType)."""
        if not isinstance(targets, list):
            return False
        want = set(tvals)
        for t in targets:
            if isinstance(t, str) and ttype is None and t in want:
                return True
            if isinstance(t, dict) and (ttype is None or t.get("type") == ttype):
                if any(str(v) in want for v in t.get("values") or []):
                    return True
        return False

    def event_get(self, eid):
        self.get_one("events", eid)

    # -- VENs and subscriptions --

    def vens_list(self):
        name = next((v for k, v in reversed(self.query()) if k == "venName"), None)
        if name is not None and not 1 <= len(name) <= 128:
            raise Refusal(400, "venName: Validation error: length (1..=128)")
        skip, limit = self.page()
        items = [(raw, obj) for _, raw, obj in self.vtn.objects("vens")
                 if name is None or (isinstance(obj, dict) and obj.get("venName") == name)]
        self.send_list(items[skip:skip + limit], "vens")

    def ven_get(self, vid):
        self.get_one("vens", vid)

    def ven_add(self):
        _, o = self.json_body()
        a = self.vtn.a
        if a.vens_refuse:
            raise Refusal(a.vens_refuse, "Forbidden" if a.vens_refuse == 403 else "Conflict")
        if not isinstance(o, dict):
            raise Refusal(400, "Failed to deserialize the JSON body into the target type: "
                               "expected an object")
        if a.version == "3.1.1":
            ot = o.get("objectType")
            if ot == "BL_VEN_REQUEST":
                raise Refusal(400, "Did receive a BL_VEN_REQUEST, but user is authenticated "
                                   "as a VEN client")
            if ot != "VEN_VEN_REQUEST":
                raise Refusal(400, "Failed to deserialize the JSON body into the target type: "
                                   "missing or unknown objectType (VEN_VEN_REQUEST)")
        elif a.strict and o.get("objectType", "VEN") != "VEN":
            raise Refusal(400, "objectType: expected VEN")
        name = o.get("venName")
        if not _str_ok(name):
            raise Refusal(400, "Failed to deserialize the JSON body into the target type: "
                               "venName: a string of 1..128 characters")
        for _, _, v in self.vtn.objects("vens"):
            if isinstance(v, dict) and (v.get("venName") == name or
                                        (a.version == "3.1.1" and not a.no_auth and
                                         v.get("clientID") == self.client)):
                raise Refusal(409, "Conflict")
        ts = now_rfc3339()
        ven = {"id": str(uuid.uuid4()), "createdDateTime": ts, "modificationDateTime": ts}
        if a.version == "3.1.1":  # openleadr-wire/src/ven.rs Ven: no objectType
            ven.update({"clientID": self.client, "targets": [], "venName": name})
        else:
            ven.update({"objectType": "VEN", "venName": name})
        if o.get("attributes") is not None:
            ven["attributes"] = o["attributes"]
        self.vtn.store("vens", ven, name=ven["id"])
        self.send(201, ven, note="ven " + name)

    def webhooks_refused(self):
        """--no-webhooks: the status, until DIR/webhooks_on exists"""
        a = self.vtn.a
        if a.no_webhooks and not os.path.exists(self.vtn.path("webhooks_on")):
            h = {"Allow": "GET"} if a.no_webhooks == 405 else None
            raise Refusal(a.no_webhooks, "Webhooks are not supported", h)

    def echo_check(self, url):
        """--echo-challenge: GET the callback with a random echo value"""
        v = secrets.token_urlsafe(16)
        u = (url + ("&" if "?" in url else "?") + "echo=" + v) \
            if self.vtn.a.echo_challenge == "query" else (url.rstrip("/") + "/echo?echo=" + v)
        try:
            with urllib.request.urlopen(u, timeout=5) as r:
                got, code = r.read().decode("utf-8", "replace"), r.status
        except Exception as e:  # an HTTP error status, a refused connection
            got, code = str(e), getattr(e, "code", 0)
        if code != 200 or got.strip() != v:
            raise Refusal(400, "callback verification failed: GET %s answered %s %r"
                          % (u, code, got[:80]))
        sys.stderr.write("mock_vtn: echo challenge %s -> 200 echoed\n" % u)

    def subscriptions_list(self):
        self.webhooks_refused()
        q = dict(self.query())
        pid = self.id_param("programID")
        skip, limit = self.page()
        items = []
        for _, raw, obj in self.vtn.objects("subscriptions"):
            if not isinstance(obj, dict):
                continue
            if "clientName" in q and obj.get("clientName") != q["clientName"]:
                continue
            if pid is not None and obj.get("programID") != pid:
                continue
            items.append((raw, obj))
        self.send_list(items[skip:skip + limit], "subscriptions")

    def subscription_add(self):
        self.webhooks_refused()
        _, o = self.json_body()
        a = self.vtn.a
        if not isinstance(o, dict):
            raise Refusal(400, "Failed to deserialize the JSON body into the target type: "
                               "expected an object")
        if not _str_ok(o.get("clientName")):
            raise Refusal(400, "Failed to deserialize the JSON body into the target type: "
                               "clientName: a string of 1..128 characters")
        if "programID" in o and o["programID"] is not None and \
                not (isinstance(o["programID"], str) and OBJECT_ID.match(o["programID"])):
            raise Refusal(400, "programID: not an objectID")
        if a.strict and a.version == "3.0.1" and "programID" not in o:
            raise Refusal(400, "programID: required (3.0.1 subscription)")
        ops = o.get("objectOperations")
        if not isinstance(ops, list) or not 1 <= len(ops) <= 15:
            raise Refusal(400, "objectOperations: Validation error: length (1..=15)")
        opnames = {"CREATE", "UPDATE", "DELETE"} | ({"READ"} if a.version == "3.0.1" else set())
        out_ops = []
        for i, op in enumerate(ops):
            if not isinstance(op, dict) or not isinstance(op.get("objects"), list) or \
                    not isinstance(op.get("operations"), list):
                raise Refusal(400, "objectOperations[%d]: objects and operations required" % i)
            bad = [x for x in op["objects"] if x not in OBJECT_TYPES] + \
                  [x for x in op["operations"] if x not in opnames]
            if bad:
                raise Refusal(400, "objectOperations[%d]: unknown variant %s"
                              % (i, json.dumps(bad[0])))
            if a.strict and not isinstance(op.get("callbackUrl"), str):
                raise Refusal(400, "objectOperations[%d].callbackUrl: required" % i)
            x = {"objects": op["objects"], "operations": op["operations"],
                 "mechanism": op.get("mechanism", "WEBHOOK")}
            for k in ("callbackUrl", "bearerToken"):
                if op.get(k) is not None:
                    x[k] = op[k]
            out_ops.append(x)
        if a.echo_challenge:
            for x in out_ops:
                if isinstance(x.get("callbackUrl"), str):
                    self.echo_check(x["callbackUrl"])
        ts = now_rfc3339()
        sub = {"id": str(uuid.uuid4()), "createdDateTime": ts, "modificationDateTime": ts}
        if a.version == "3.0.1":
            sub["objectType"] = "SUBSCRIPTION"
        sub.update({"clientID": self.client, "clientName": o["clientName"]})
        if o.get("programID") is not None:
            sub["programID"] = o["programID"]
        sub["objectOperations"] = out_ops
        self.vtn.store("subscriptions", sub, name=sub["id"])
        self.send(201, sub, note="subscription for " + o["clientName"])

    # -- reports --

    def reports_list(self):
        # openleadr-vtn/src/api/report.rs QueryParams (the 3.1.1 spec's GET
        # /reports parameters): programID, eventID, clientName filter
        q = dict(self.query())
        skip, limit = self.page()
        items = []
        for _, raw, obj in self.vtn.objects("reports"):
            if not isinstance(obj, dict):
                continue
            if any(k in q and obj.get(k) != q[k] for k in ("programID", "eventID", "clientName")):
                continue
            items.append((raw, obj))
        self.send_list(items[skip:skip + limit], "reports")

    def report_add(self):
        _, o = self.json_body()
        a = self.vtn.a
        if a.strict_reports:
            errs = check_report(o, a.version)
            if errs:
                raise Refusal(400, "; ".join(errs))
        elif not isinstance(o, dict):
            raise Refusal(400, "Failed to deserialize the JSON body into the target type: "
                               "expected an object")
        if a.olrs_reports:
            # openleadr-rs's database: report.event_id references event(id)
            # and report_name is unique (sqlx errors -> 409, error.rs)
            if not isinstance(o.get("eventID"), str) or \
                    self.vtn.find("events", o["eventID"]) is None:
                raise Refusal(409, "A foreign key constraint is violated")
            name = o.get("reportName")
            if name is not None:
                for _, _, r in self.vtn.objects("reports"):
                    if isinstance(r, dict) and r.get("reportName") == name:
                        raise Refusal(409, "Conflict")
        ts = now_rfc3339()
        # stored as the VTN answers it (GET /reports lists it so: with its
        # id), the VEN's fields first in their order, on one line
        rep = {k: v for k, v in o.items() if v is not None}
        rep.update({"id": str(uuid.uuid4()), "createdDateTime": ts, "modificationDateTime": ts,
                    "objectType": "REPORT", "clientID": self.client})
        n = self.vtn.store("reports", None, raw=json.dumps(
            rep, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))
        if a.report_delay > 0:  # a slow VTN: stored, answered later
            time.sleep(a.report_delay)
        self.send(201, rep, note="report %s for event %s" % (n, o.get("eventID")))

    def notifiers(self):
        # openleadr-wire/src/subscription.rs NotifiersResponse as openleadr-rs
        # answers without MQTT: no WEBHOOK key (the spec requires one);
        # --no-webhooks: WEBHOOK false until DIR/webhooks_on exists
        if self.vtn.a.no_webhooks:
            on = os.path.exists(self.vtn.path("webhooks_on"))
            return self.send(200, {"WEBHOOK": on})
        self.send(200, {"WEBSOCKET": False})


def olrs_order(item):
    """openleadr-rs's ORDER BY priority ASC (NULLs last), created DESC."""
    _, obj = item
    obj = obj if isinstance(obj, dict) else {}
    pr = obj.get("priority")
    created = obj.get("createdDateTime") or ""
    try:
        c = dt.datetime.fromisoformat(created.replace("Z", "+00:00")).timestamp()
    except ValueError:
        c = 0.0
    return (pr is None or not _is_int(pr), pr if _is_int(pr) else 0, -c)


def serve(args):
    vtn = Vtn(args)
    handler = type("H", (Handler,), {"vtn": vtn})
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    srv.daemon_threads = True
    vtn.port = srv.server_address[1]
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % vtn.port)
    os.replace(tmp, args.port_file)
    sys.stderr.write("mock_vtn: OpenADR %s VTN on 127.0.0.1:%d, state %s\n"
                     % (args.version, vtn.port, args.state))
    sys.stderr.flush()
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass


# ---- self-test ------------------------------------------------------------

def self_test():
    """Start the mock as a process on port 0 and exercise it; exit 0 or 1."""
    import http.client
    tmp = tempfile.mkdtemp(prefix="mock_vtn.")
    state = os.path.join(tmp, "state")
    os.makedirs(os.path.join(state, "events"))
    os.makedirs(os.path.join(state, "programs"))
    for i in range(120):
        ev = {"id": "ev-%03d" % i, "objectType": "EVENT", "programID": "p1" if i < 100 else "p2",
              "createdDateTime": "2030-01-06T10:00:00Z",
              "modificationDateTime": "2030-01-06T10:00:00Z",
              "intervalPeriod": {"start": "2030-01-07T12:00:00Z", "duration": "PT1H"},
              "intervals": [{"id": 0, "payloads": [{"type": "SIMPLE", "values": [1]}]}]}
        with open(os.path.join(state, "events", "ev-%03d.json" % i), "w") as f:
            json.dump(ev, f)
    with open(os.path.join(state, "programs", "p1.json"), "w") as f:
        json.dump({"id": "p1", "objectType": "PROGRAM", "programName": "p1",
                   "payloadDescriptors": [{"objectType": "EVENT_PAYLOAD_DESCRIPTOR",
                                           "payloadType": "IMPORT_CAPACITY_LIMIT",
                                           "units": "W"}]}, f)
    portf = os.path.join(tmp, "port")
    log = open(os.path.join(tmp, "vtn.log"), "w+")
    proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--port-file", portf,
                             "--state", state, "--strict-reports", "--olrs-reports",
                             "--client-id", "ven-client", "--client-secret", "s3cret"],
                            stderr=log)
    fails, checks = [], [0]

    def check(what, cond, extra=""):
        checks[0] += 1
        if not cond:
            fails.append("%s %s" % (what, extra))

    try:
        for _ in range(100):
            if os.path.exists(portf):
                break
            time.sleep(0.05)
        port = int(open(portf).read())

        def req(method, path, body=None, ctype=None, token=None, headers=None):
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            h = dict(headers or {})
            if ctype:
                h["Content-Type"] = ctype
            if token:
                h["Authorization"] = "Bearer " + token
            c.request(method, path, body=body, headers=h)
            r = c.getresponse()
            data = r.read()
            c.close()
            try:
                obj = json.loads(data)
            except ValueError:
                obj = None
            return r.status, obj, r

        st, o, r = req("GET", "/events")
        check("401 without a token", st == 401 and o and o.get("status") == 401 and
              r.getheader("WWW-Authenticate") == 'Bearer realm="VTN"', (st, o))
        st, o, _ = req("GET", "/auth/server")
        check("auth/server", st == 200 and o["tokenURL"].endswith("/auth/token"), (st, o))
        form = "grant_type=client_credentials&client_id=ven-client&client_secret=s3cret"
        st, o, _ = req("POST", "/auth/token", "grant_type=password", "application/x-www-form-urlencoded")
        check("unsupported grant", st == 400 and o["error"] == "unsupported_grant_type", (st, o))
        st, o, _ = req("POST", "/auth/token", json.dumps({"grant_type": "client_credentials"}),
                       "application/json")
        check("token needs a form", st == 415, (st, o))
        st, o, _ = req("POST", "/auth/token", form.replace("s3cret", "wrong"),
                       "application/x-www-form-urlencoded")
        check("wrong secret", st == 401 and o["error"] == "invalid_client", (st, o))
        basic = base64.b64encode(b"ven-client:s3cret").decode()
        st, o, _ = req("POST", "/auth/token", "grant_type=client_credentials",
                       "application/x-www-form-urlencoded", headers={"Authorization": "Basic " + basic})
        check("token by HTTP Basic", st == 200 and o["token_type"] == "Bearer", (st, o))
        st, o, _ = req("POST", "/auth/token", form, "application/x-www-form-urlencoded")
        check("token", st == 200 and o["access_token"] and o["expires_in"] == 2592000, (st, o))
        tok = o["access_token"]
        st, o, _ = req("GET", "/events", token="mock-not-issued")
        check("403 for a token not issued", st == 403, (st, o))
        with open(os.path.join(state, "revoked"), "w") as f:
            f.write("*\n")
        st, o, _ = req("GET", "/events", token=tok)
        check("403 for a revoked token", st == 403 and
              o["detail"] == "Invalid authentication token provided", (st, o))
        os.remove(os.path.join(state, "revoked"))

        # pagination: 120 events, pages of 50, 50, 20; the default limit is 50
        ids = []
        for skip, n in ((0, 50), (50, 50), (100, 20)):
            st, o, _ = req("GET", "/events?skip=%d&limit=50" % skip, token=tok)
            check("page skip=%d" % skip, st == 200 and len(o) == n, (st, len(o or [])))
            ids += [e["id"] for e in o or []]
        check("pages in name order", ids == ["ev-%03d" % i for i in range(120)])
        st, o, _ = req("GET", "/events", token=tok)
        check("default limit 50", st == 200 and len(o) == 50, (st, len(o or [])))
        for q in ("limit=51", "limit=0", "skip=-1", "limit=x"):
            st, o, _ = req("GET", "/events?" + q, token=tok)
            check("400 for " + q, st == 400 and o["status"] == 400, (st, o))
        st, o, _ = req("GET", "/events?programID=p2&limit=50", token=tok)
        check("programID filter", st == 200 and len(o) == 20, (st, len(o or [])))
        st, o, _ = req("GET", "/events?programID=p.2", token=tok)
        check("programID not an objectID", st == 400, (st, o))

        # a poll failing half-way
        with open(os.path.join(state, "fail_skip"), "w") as f:
            f.write("50\n")
        st0, _, _ = req("GET", "/events?limit=50", token=tok)
        st1, o, _ = req("GET", "/events?skip=50&limit=50", token=tok)
        check("fail_skip: page 2 fails, page 1 not", st0 == 200 and st1 == 500 and
              o["title"] == "500 Internal Server Error", (st0, st1, o))
        os.remove(os.path.join(state, "fail_skip"))
        st, o, _ = req("GET", "/events?skip=50&limit=50", token=tok)
        check("fail_skip removed", st == 200 and len(o) == 50, st)

        # deletion at the VTN
        st, o, _ = req("GET", "/events/ev-005", token=tok)
        check("event read", st == 200 and o["id"] == "ev-005", st)
        os.remove(os.path.join(state, "events", "ev-005.json"))
        st, o, _ = req("GET", "/events/ev-005", token=tok)
        check("404 once deleted", st == 404 and o["status"] == 404 and "detail" not in o, (st, o))
        st, o, _ = req("GET", "/events?skip=100&limit=50", token=tok)
        check("listing after deletion", st == 200 and len(o) == 19, len(o or []))

        st, o, _ = req("GET", "/programs/p1", token=tok)
        check("program", st == 200 and o["payloadDescriptors"][0]["units"] == "W", (st, o))
        st, o, _ = req("GET", "/programs/nope", token=tok)
        check("program 404", st == 404, st)

        # registration and subscription, as vtn_client.c asks
        st, o, _ = req("GET", "/vens?venName=pfi-test-ven", token=tok)
        check("no VEN yet", st == 200 and o == [], (st, o))
        body = json.dumps({"objectType": "VEN_VEN_REQUEST", "venName": "pfi-test-ven"})
        st, o, _ = req("POST", "/vens", body, "application/json", tok)
        check("VEN created", st == 201 and OBJECT_ID.match(o["id"]) and
              o["clientID"] == "ven-client", (st, o))
        st, o, _ = req("POST", "/vens", body, "application/json", tok)
        check("VEN twice: 409", st == 409, (st, o))
        st, o, _ = req("GET", "/vens?venName=pfi-test-ven", token=tok)
        check("VEN listed", st == 200 and len(o) == 1, (st, o))
        body = json.dumps({"clientName": "pfi-test-ven", "objectOperations": [
            {"objects": ["EVENT"], "operations": ["CREATE", "UPDATE", "DELETE"],
             "callbackUrl": "http://127.0.0.1:1/openadr3/events", "bearerToken": "x" * 32}]})
        st, o, _ = req("POST", "/subscriptions", body, "application/json", tok)
        check("subscription", st == 201 and o["objectOperations"][0]["mechanism"] == "WEBHOOK",
              (st, o))
        st, o, _ = req("GET", "/subscriptions?clientName=pfi-test-ven", token=tok)
        check("subscription listed", st == 200 and len(o) == 1, (st, o))

        # reports
        good = {"eventID": "ev-001", "clientName": "pfi-test-ven", "reportName": "pfi ev-001",
                "payloadDescriptors": [{"objectType": "REPORT_PAYLOAD_DESCRIPTOR",
                                        "payloadType": "DEMAND", "units": "KW"}],
                "resources": [{"resourceName": "pfi-gpus", "intervals": [
                    {"id": 0, "intervalPeriod": {"start": "2030-01-07T12:00:00Z",
                                                 "duration": "PT60S"},
                     "payloads": [{"type": "DEMAND", "values": [1.5]}]}]}]}
        for what, bad, needle in (
                ("eventID with a dot", dict(good, eventID="ev.001"), "eventID"),
                ("interval id a string", json.loads(json.dumps(good).replace('"id": 0', '"id": "0"')),
                 "intervals[0].id"),
                ("intervalPeriod without start",
                 json.loads(json.dumps(good).replace('"start": "2030-01-07T12:00:00Z", ', "")),
                 "intervalPeriod.start"),
                ("no clientName", {k: v for k, v in good.items() if k != "clientName"},
                 "clientName")):
            st, o, _ = req("POST", "/reports", json.dumps(bad), "application/json", tok)
            check("report refused: " + what, st == 400 and needle in o.get("detail", ""), (st, o))
        st, o, _ = req("POST", "/reports", json.dumps(good), "application/json", tok)
        check("report accepted", st == 201 and o["objectType"] == "REPORT" and
              o["clientID"] == "ven-client", (st, o))
        stored = os.path.join(state, "reports", "001.json")
        kept = json.load(open(stored)) if os.path.exists(stored) else {}
        check("report stored as answered: the VEN's fields, the VTN's id",
              {k: v for k, v in kept.items() if k in good} == good and kept.get("id") == o["id"],
              kept)
        st, o, _ = req("GET", "/reports?eventID=%s&clientName=%s" % (good["eventID"],
                                                                   good["clientName"]), None, None, tok)
        check("GET /reports by eventID and clientName lists it with its id",
              st == 200 and [r.get("id") for r in o] == [kept.get("id")], (st, o))
        st, o, _ = req("GET", "/reports?eventID=no-such-event", None, None, tok)
        check("GET /reports by another eventID lists nothing", st == 200 and o == [], (st, o))
        st, o, _ = req("POST", "/reports", json.dumps(good), "application/json", tok)
        check("same reportName again: 409 (--olrs-reports)", st == 409, (st, o))
        st, o, _ = req("POST", "/reports", json.dumps(dict(good, eventID="ev-005",
                                                           reportName="r2")),
                       "application/json", tok)
        check("report of a deleted event: 409 (--olrs-reports)", st == 409, (st, o))
        check("refused reports kept", len(os.listdir(os.path.join(state, "refused"))) == 6,
              os.listdir(os.path.join(state, "refused")))

        # the interop fixtures, where this tree has them
        fx = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "openadr3", "interop")
        if os.path.isdir(fx):
            for name, code in (("ug_report_7.7_aggregated.json", 201),
                               ("elaad_report_post.json", 400),
                               ("ug_report_8.3_usage.json", 400)):
                body = json.load(open(os.path.join(fx, name)))
                body["eventID"] = "ev-002"
                body["reportName"] = name
                st, o, _ = req("POST", "/reports", json.dumps(body), "application/json", tok)
                check("fixture %s: %d" % (name, code), st == code, (st, o))
            shutil.copy(os.path.join(fx, "olrs_full_form_durations.json"),
                        os.path.join(state, "events", "zz-olrs.json"))
            st, o, r = req("GET", "/events/0c5e2f7a-91d3-4b6e-a8f4-3d2b1c0e9a01", token=tok)
            check("fixture served verbatim", st == 200 and
                  o["intervalPeriod"]["duration"] == "P0Y0M0DT1H0M0S", (st, o))
        st, o, _ = req("DELETE", "/events", token=tok)
        check("405 for a method not served", st == 405, st)
    except Exception as e:  # a crash is a failure, reported
        fails.append("exception: %r" % e)
    finally:
        proc.terminate()
        proc.wait(5)
        log.seek(0)
        lines = log.read().splitlines()
        log.close()
    if not any(" -> 401 " in ln for ln in lines):
        fails.append("no request logged: %r" % lines[:3])
    for f in fails:
        print("mock_vtn self-test: FAIL %s" % f)
    if fails:
        print("mock_vtn self-test: log kept in %s" % tmp)
        return 1
    shutil.rmtree(tmp, ignore_errors=True)
    print("mock_vtn self-test: ok (%d checks, %d requests logged)" % (checks[0], len(lines) - 1))
    return 0


def main():
    ap = argparse.ArgumentParser(description="A mock OpenADR 3 VTN (openleadr-rs's answers).")
    ap.add_argument("--port-file", help="where the bound port is written")
    ap.add_argument("--state", help="the state directory (events/, programs/, ...)")
    ap.add_argument("--version", choices=("3.1.1", "3.0.1"), default="3.1.1")
    ap.add_argument("--strict-reports", action="store_true",
                    help="check POST /reports against the version's schema (400 on failure)")
    ap.add_argument("--olrs-reports", action="store_true",
                    help="409 on a reused reportName or an eventID without event (openleadr-rs)")
    ap.add_argument("--strict", action="store_true",
                    help="check POST /vens and /subscriptions against the version's schema")
    ap.add_argument("--page-limit", type=int, default=50, help="the largest limit (50)")
    ap.add_argument("--over-limit", choices=("reject", "cap"), default="reject",
                    help="a limit outside 1..page-limit: 400 (openleadr-rs) or capped")
    ap.add_argument("--order", choices=("name", "olrs"), default="name",
                    help="events by file name, or openleadr-rs's priority/created order")
    ap.add_argument("--no-auth", action="store_true", help="accept requests without a token")
    ap.add_argument("--client-id", help="the only client_id accepted (default: any)")
    ap.add_argument("--client-secret", help="the only client_secret accepted (default: any)")
    ap.add_argument("--expires-in", type=int, default=30 * 24 * 3600,
                    help="token lifetime, s (openleadr-rs: 30 days)")
    ap.add_argument("--bad-token-status", type=int, choices=(401, 403), default=403,
                    help="the answer to a token not accepted (openleadr-rs: 403)")
    ap.add_argument("--echo-challenge", choices=("query", "path"),
                    help="verify each callbackUrl before a subscription (see the header)")
    ap.add_argument("--no-webhooks", type=int, choices=(404, 405, 501),
                    help="/subscriptions answer this status until DIR/webhooks_on exists")
    ap.add_argument("--vens-refuse", type=int, choices=(403, 409),
                    help="POST /vens answers this; one VEN bl-ven-1 is there already")
    ap.add_argument("--ven-targets", action="append", help="bl-ven-1's targets (grants)")
    ap.add_argument("--rate-limit", type=int, default=0,
                    help="the first K GET /events answer 429 with Retry-After")
    ap.add_argument("--retry-after", default="2", help="the 429's Retry-After (seconds or date)")
    ap.add_argument("--short-pages", type=int, default=0, help="at most K events a page")
    ap.add_argument("--report-delay", type=float, default=0,
                    help="answer each POST /reports S seconds after storing it")
    ap.add_argument("--expires-in-string", action="store_true",
                    help="the token's expires_in as a string")
    ap.add_argument("--local-timestamps", action="store_true",
                    help="timestamps of created objects without an offset")
    ap.add_argument("--self-test", action="store_true", help="run the self-test and exit")
    args = ap.parse_args()
    if args.self_test:
        sys.exit(self_test())
    if not args.port_file or not args.state:
        ap.error("--port-file and --state are required")
    if args.page_limit < 1:
        ap.error("--page-limit: at least 1")
    global LOCAL_TIMESTAMPS
    LOCAL_TIMESTAMPS = args.local_timestamps
    serve(args)


if __name__ == "__main__":
    main()
