#!/usr/bin/env python3
"""A chorus orchestrator driver for `agentconform run --role client`, standard library only.

Scenario `hire` (input {"skill", "input_data", "budget", "max_cost", "min_reputation",
"orchestrator_id", "owner_id", "result_wait_ms"}, each optional):
1. GET {base}/discover?skill=…&min_reputation=…&max_cost=… and hire the first agent;
2. start a callback listener on 127.0.0.1 (POST /results) and POST the job to the
   agent's job URL (its api_endpoint, with /jobs appended unless it ends so): a fresh
   UUID v4 job_id, the orchestrator_id, skill_name, input_data, budget, currency
   "chorus_credits_v1", callback_url and an ISO 8601 UTC timestamp_utc;
3. take the Job Result from the reply (2xx, status SUCCESS or FAILURE) or else from the
   first final callback within result_wait_ms; a result that names another job_id is
   an error (no outcome report, no payment);
4. report the outcome with POST {base}/results (the result plus orchestrator_id);
5. after a SUCCESS only, pay its execution_cost (else the listed cost_per_call) once
   with POST {base}/transfer to the agent's owner_id (else its agent_id), unless that
   amount is above the job's budget, which is an error and pays nothing;
6. print the result's output_data as {"result": ...}.

Every reply and callback received is printed as {"received": ...} as it comes. A
refusal (HTTP 4xx/5xx: SKILL_MISMATCH, BUDGET_INSUFFICIENT, ...), a FAILURE, no result
in time, a refused transfer, or anything malformed is printed as {"error": "..."} and
the driver exits 1; nothing is paid then. It does not register itself (POST /register
is optional and the reference orchestrator does not).

The harness gives the registry's base URL (with or without a trailing slash) and the
input file in the environment (AGENTCONFORM_URL, AGENTCONFORM_SCENARIO,
AGENTCONFORM_INPUT). Only http and https URLs are followed, redirects never, and no
proxy is used; every request has a deadline and every body (reply or callback) a size
cap, and the whole scenario ends by one deadline.
"""
import datetime, http.server, json, math, os, queue, signal, sys, threading, time
import urllib.error, urllib.parse, urllib.request, uuid

MAX_BYTES = 1 << 20  # the cap on every reply body and every callback body
REQUEST_TIMEOUT_S = 5.0  # the deadline of one request
SCENARIO_TIMEOUT_S = 8.5  # the deadline of the whole scenario (the harness allows 10 s)
CURRENCY = "chorus_credits_v1"
CALLBACK_PATH = "/results"
CALLBACK_QUEUE = 64  # callbacks waiting unread before the listener answers 503
ERROR_CODES = ["SKILL_MISMATCH", "BUDGET_INSUFFICIENT", "AGENT_OFFLINE", "EXECUTION_ERROR", "TRANSFER_FAILED"]
EPSILON = 1e-9  # credits are decimals carried in binary floats


class ClientError(Exception):
    """Why the orchestrator gave up."""


class NoRedirect(urllib.request.HTTPRedirectHandler):
    """A redirect is an answer, not a new request: nothing is re-sent elsewhere."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}), NoRedirect())
DEADLINE = time.monotonic() + SCENARIO_TIMEOUT_S


def on_alarm(signum, frame):
    raise ClientError(f"no end within {SCENARIO_TIMEOUT_S} s")


def left():
    """Seconds left before the scenario's deadline; none left is an error."""
    t = DEADLINE - time.monotonic()
    if t <= 0:
        raise ClientError(f"no end within {SCENARIO_TIMEOUT_S} s")
    return t


def now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def http_url(url, what):
    if not isinstance(url, str) or urllib.parse.urlsplit(url).scheme not in ("http", "https"):
        raise ClientError(f"{what} {json.dumps(url)} is not an http or https URL")
    return url


def received(v):
    print(json.dumps({"received": v}), flush=True)


# --- HTTP: (status, raw body) of one request, by the deadline, capped ---
def read_capped(resp):
    chunks, size = [], 0
    while True:
        left()
        chunk = resp.read1(65536)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > MAX_BYTES:
            raise ClientError(f"reply larger than {MAX_BYTES} bytes")
        chunks.append(chunk)


def request(method, url, body=None):
    headers = {"Accept": "application/json"}
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    req = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with OPENER.open(req, timeout=min(REQUEST_TIMEOUT_S, left())) as r:
            return r.status, read_capped(r)
    except urllib.error.HTTPError as e:  # a 3xx, 4xx or 5xx: its body is still the reply
        if e.fp is None:
            return e.code, b""
        with e:
            return e.code, read_capped(e)
    except (urllib.error.URLError, OSError) as e:
        raise ClientError(f"HTTP: {method} {url}: {getattr(e, 'reason', e)}") from None


def lenient(raw):
    """A body as JSON; an empty one is null, any other non-JSON its text."""
    if not raw.strip():
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", "replace")


def error_code(body):
    """The error a refusal names: one of ERROR_CODES as any string value in the body
    (depth first, in document order), else its error_message."""
    def known(v):
        if isinstance(v, str):
            return v if v in ERROR_CODES else None
        for x in (v.values() if isinstance(v, dict) else v if isinstance(v, list) else []):
            c = known(x)
            if c:
                return c
        return None
    code = known(body)
    if code:
        return code
    if isinstance(body, dict) and isinstance(body.get("error_message"), str) and body["error_message"]:
        return body["error_message"]
    return None


def refused(status, body):
    code = error_code(body)
    note = f" ({code})" if code else ""
    return ClientError(f"refused: HTTP {status}{note}: {json.dumps(body)}")


# --- the input, with the reference client's defaults ---
def query_value(ask, key, default):
    v = ask.get(key)
    if v is None:
        return default
    if isinstance(v, str):
        return v
    if is_number(v):
        return json.dumps(v)
    raise ClientError(f"bad scenario input: `{key}` must be a number, not {json.dumps(v)}")


def text_value(ask, key, default):
    v = ask.get(key)
    if v is None:
        return default
    if not isinstance(v, str):
        raise ClientError(f"bad scenario input: `{key}` must be a string, not {json.dumps(v)}")
    return v


def read_input():
    with open(os.environ["AGENTCONFORM_INPUT"]) as f:
        ask = json.load(f)
    if ask is None:
        ask = {}
    if not isinstance(ask, dict):
        raise ClientError("bad scenario input: the input must be an object")
    budget = ask.get("budget")
    if budget is None:
        budget = 0.15
    if not is_number(budget) or budget < 0:
        raise ClientError(f"bad scenario input: `budget` must be a number, not {json.dumps(budget)}")
    wait = ask.get("result_wait_ms")
    if wait is not None and (not isinstance(wait, int) or isinstance(wait, bool) or wait < 0):
        raise ClientError(f"bad scenario input: `result_wait_ms` must be a whole number, not {json.dumps(wait)}")
    input_data = ask.get("input_data")
    return {
        "skill": text_value(ask, "skill", "echo_text"),
        "input_data": {"text": "hello"} if input_data is None else input_data,
        "budget": budget,
        "max_cost": query_value(ask, "max_cost", "0.15"),
        "min_reputation": query_value(ask, "min_reputation", "0"),
        "orchestrator_id": text_value(ask, "orchestrator_id", str(uuid.uuid4())),
        "owner_id": text_value(ask, "owner_id", "reference-orchestrator"),
        "result_wait_s": None if wait is None else wait / 1000,
    }


# --- the callback listener ---
class Callbacks(http.server.BaseHTTPRequestHandler):
    timeout = REQUEST_TIMEOUT_S  # a sender that stalls is dropped
    inbox = None  # queue.Queue of parsed bodies, set by listen()

    def answer(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)
        self.close_connection = True

    def do_POST(self):
        if self.path.split("?")[0] != CALLBACK_PATH:
            return self.answer(404, {"error": "unknown endpoint"})
        try:
            size = int(self.headers.get("Content-Length", ""))
        except ValueError:
            return self.answer(411, {"error": "a Content-Length is required"})
        if size < 0 or size > MAX_BYTES:
            return self.answer(413, {"error": "the body cannot be read within 1 MiB"})
        try:
            value = json.loads(self.rfile.read(size))
        except ValueError:
            return self.answer(400, {"error": "the body is not JSON"})
        try:
            self.inbox.put_nowait(value)
        except queue.Full:
            return self.answer(503, {"error": "the orchestrator takes no more callbacks"})
        self.answer(200, {})

    def do_GET(self):
        self.answer(404, {"error": "unknown endpoint"})

    def log_message(self, *args):
        pass


def listen():
    """A loopback listener for POST /results; returns (server, inbox, callback_url)."""
    inbox = queue.Queue(maxsize=CALLBACK_QUEUE)
    handler = type("Handler", (Callbacks,), {"inbox": inbox})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    server.block_on_close = False
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return server, inbox, f"http://127.0.0.1:{server.server_address[1]}{CALLBACK_PATH}"


# --- the steps of a hire ---
def job_url(api_endpoint):
    """api_endpoint unchanged when it ends in /jobs, else with /jobs appended."""
    trimmed = api_endpoint.rstrip("/")
    return trimmed if trimmed.endswith("/jobs") else trimmed + "/jobs"


def discover(base, hire):
    """The first agent listed for the skill: (job URL, payee, listed cost)."""
    q = lambda s: urllib.parse.quote(s, safe="")
    url = (f"{base}/discover?skill={q(hire['skill'])}&min_reputation={q(hire['min_reputation'])}"
           f"&max_cost={q(hire['max_cost'])}")
    status, raw = request("GET", url)
    try:
        found = json.loads(raw)
    except ValueError as e:
        raise ClientError(f"the discovery reply (HTTP {status}) is not JSON: {e}") from None
    received(found)
    if not 200 <= status < 300:
        raise refused(status, found)
    agents = found.get("agents") if isinstance(found, dict) else None
    if not isinstance(agents, list) or not agents:
        raise ClientError("discover found no agent for the skill")
    agent = agents[0]
    if not isinstance(agent, dict):
        raise ClientError("the reply is not what chorus.md describes: the first agent is not an object")
    endpoint = agent.get("api_endpoint")
    if not isinstance(endpoint, str) or not endpoint:
        raise ClientError("the reply is not what chorus.md describes: the first agent has no api_endpoint")
    url = http_url(job_url(endpoint), "the first agent's job URL")
    payee = next((p for p in (agent.get("owner_id"), agent.get("agent_id")) if isinstance(p, str) and p), None)
    if payee is None:
        raise ClientError("the reply is not what chorus.md describes: the first agent has neither owner_id nor agent_id")
    skill = agent.get("skill")
    listed = skill.get("cost_per_call") if isinstance(skill, dict) else None
    return url, payee, listed


def new_job(hire, callback_url):
    return {
        "job_id": str(uuid.uuid4()),
        "orchestrator_id": hire["orchestrator_id"],
        "skill_name": hire["skill"],
        "input_data": hire["input_data"],
        "budget": hire["budget"],
        "currency": CURRENCY,
        "callback_url": callback_url,
        "timestamp_utc": now(),
    }


def is_final(v):
    """A Job Result (§3.4) with a final status."""
    return (isinstance(v, dict) and isinstance(v.get("job_id"), str)
            and v.get("status") in ("SUCCESS", "FAILURE"))


def check_own(v, job_id):
    """A Job Result that names another job is never taken: an error."""
    if isinstance(v, dict) and "job_id" in v and v.get("job_id") != job_id:
        raise ClientError(f"the result's job_id {json.dumps(v.get('job_id'))} is not the job's ({job_id})")


def obtain_result(url, job, inbox, hire):
    """Sends the job; its final result, from a 2xx reply that carries one, else from
    the first final callback (PENDING ones are skipped) within result_wait_ms."""
    status, raw = request("POST", url, job)
    body = lenient(raw)
    received(body)
    if not 200 <= status < 300:
        raise refused(status, body)
    check_own(body, job["job_id"])
    if is_final(body):
        return body
    wait = hire["result_wait_s"]
    until = time.monotonic() + (left() if wait is None else min(wait, left()))
    while True:
        t = until - time.monotonic()
        if t <= 0:
            raise ClientError(f"no final result for job {job['job_id']} within {wait if wait is not None else SCENARIO_TIMEOUT_S} s")
        try:
            callback = inbox.get(timeout=t)
        except queue.Empty:
            continue
        received(callback)
        check_own(callback, job["job_id"])
        if is_final(callback):
            return callback


def report_outcome(base, result, hire):
    """POST {base}/results: the result plus orchestrator_id; a refusal or a network
    error is only recorded (the outcome channel is a profile extension)."""
    report = dict(result, orchestrator_id=hire["orchestrator_id"])
    try:
        status, raw = request("POST", f"{base}/results", report)
        received(lenient(raw))
    except ClientError as e:
        print(f"outcome report not delivered: {e}", file=sys.stderr, flush=True)


def amount_due(result, listed, budget):
    """The execution_cost of a SUCCESS (else the listed cost_per_call), never more than
    the job's budget."""
    cost = result.get("execution_cost")
    if cost is None:
        cost = listed
    if not is_number(cost) or cost < 0:
        raise ClientError(f"the reply is not what chorus.md describes: the result's execution_cost is {json.dumps(result.get('execution_cost'))}, not a number of credits")
    if cost > budget + EPSILON:
        raise ClientError(f"the execution_cost {cost} is above the job's budget {budget}: not paid")
    return cost


def pay(base, amount, job_id, payee, hire):
    """POST {base}/transfer of `amount` for `job_id`, once; a refusal is an error."""
    transfer = {
        "transfer_id": str(uuid.uuid4()),
        "from_owner": hire["owner_id"],
        "to_owner": payee,
        "amount": amount,
        "job_id": job_id,
        "timestamp_utc": now(),
    }
    status, raw = request("POST", f"{base}/transfer", transfer)
    body = lenient(raw)
    received(body)
    if not 200 <= status < 300 or error_code(body) == "TRANSFER_FAILED":
        raise refused(status, body)


def hire_once(base, hire):
    url, payee, listed = discover(base, hire)
    server, inbox, callback_url = listen()
    try:
        job = new_job(hire, callback_url)
        result = obtain_result(url, job, inbox, hire)
    finally:
        server.shutdown()
        server.server_close()
    report_outcome(base, result, hire)
    if result["status"] != "SUCCESS":
        why = result.get("error_message")
        raise ClientError(f"the agent answered {result['status']}: {why if isinstance(why, str) else '(no error_message)'}")
    pay(base, amount_due(result, listed, hire["budget"]), job["job_id"], payee, hire)
    return result.get("output_data")


def main():
    signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, SCENARIO_TIMEOUT_S + 0.5)
    base = os.environ["AGENTCONFORM_URL"]
    if base.endswith("/"):
        base = base[:-1]
    http_url(base, "AGENTCONFORM_URL")
    scenario = os.environ.get("AGENTCONFORM_SCENARIO", "")
    if scenario != "hire":
        raise ClientError(f"unknown scenario {scenario!r} (known: hire)")
    output = hire_once(base, read_input())
    signal.setitimer(signal.ITIMER_REAL, 0)
    print(json.dumps({"result": output}), flush=True)


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # the driver reports every failure of its client
        signal.setitimer(signal.ITIMER_REAL, 0)
        print(json.dumps({"error": str(e) or type(e).__name__}), flush=True)
        sys.exit(1)
