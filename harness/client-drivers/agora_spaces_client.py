#!/usr/bin/env python3
"""An agora-spaces client driver for `agentconform run --role client`.

It needs Python 3 and the one package `websockets` (10.4 or later: it uses only
`websockets.connect`, `send`, `recv`, `close` and `ConnectionClosed`).

Scenario `join-publish`: connect to the hub at `{url}?agent_id=…`, wait for
agent.registered, send space.join and wait for the space.joined that repeats its id,
publish the input's text from agent_id, then take events as in `listen` until the hub
closes the connection.

Scenario `listen`: connect and join as above, then take the space's events until the
hub closes the connection: a space.event as it comes, a delta stream joined in arrival
order at its space.event.done, a stream discarded at its space.event.cancel.

With `leave_after_ms` in the input, the client closes the connection that long after
the join (a hub never closes on its own) and ends as if the hub had closed it.

Throughout: agent.heartbeat {type, timestamp} every heartbeat_interval_ms from the
connect; a hub that sends nothing for heartbeat_timeout_ms is given up as an error.
Every event the client sends has a `type` and a numeric `timestamp` (Unix seconds).

Input (the JSON file named by AGENTCONFORM_INPUT; a missing or null member takes its
default): {"agent_id", "space", "text", "heartbeat_interval_ms", "heartbeat_timeout_ms",
"leave_after_ms"}.
The hub's URL is AGENTCONFORM_URL (ws://127.0.0.1:PORT/ws), the scenario
AGENTCONFORM_SCENARIO.

Output, one JSON object a line:
  {"received": FRAME}                           each frame from the hub but heartbeats
  {"result": {"space", "from", "text"}}         each complete event, as it completes
  {"error": "..."}                              why the client failed; then exit 1
An `error` event answering the client's own space.join or space.publish (its
request_id is their id) is such a failure, reported as "CODE: message", and the client
sends nothing more. A hub that closes the connection after the join ends the scenario
with exit 0; before it, with exit 1.
"""
import asyncio, json, os, sys, time, urllib.parse, uuid

import websockets

# The largest message the client reads; a larger one is an error.
MAX_FRAME_BYTES = 1024 * 1024
# The most text the unfinished delta streams may hold together.
MAX_PARTIAL_BYTES = 16 * 1024 * 1024
# How long the WebSocket connect (TCP and upgrade) may take, in seconds.
CONNECT_DEADLINE_S = 10.0
# How long closing may take, and reading on after a failed send, in seconds.
CLOSE_GRACE_S = 1.0
# How long the whole scenario may take, in seconds (the reference client's deadline).
SCENARIO_DEADLINE_S = 10.0
# Heartbeat intervals and timeouts above this (a week) are taken as this.
MAX_HEARTBEAT_MS = 7 * 24 * 3600 * 1000

DEFAULTS = {
    "agent_id": "python-client",
    "space": "general",
    "text": "hello from the python client",
    "heartbeat_interval_ms": 30_000,
    "heartbeat_timeout_ms": 60_000,
    # None: wait for the hub to close.
    "leave_after_ms": None,
}


class ClientError(Exception):
    """A failure of the client, reported as {"error": ...}."""


class Leave(Exception):
    """leave_after_ms has passed since the join: the client closes, a normal end."""


# --- input and output ---
def read_input(path):
    """The scenario's options: the input's members, or their defaults."""
    with open(path, encoding="utf-8") as f:
        given = json.load(f)
    if not isinstance(given, dict):
        given = {}
    opts = {}
    for key, default in DEFAULTS.items():
        v = given.get(key)
        if v is None:
            opts[key] = default
        elif key == "leave_after_ms" and isinstance(v, int) and not isinstance(v, bool) and v > 0:
            opts[key] = min(v, MAX_HEARTBEAT_MS)
        elif isinstance(default, str):
            if not isinstance(v, str):
                raise ClientError(f"the input's {key} must be a string, not {json.dumps(v)}")
            opts[key] = v
        else:
            if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                raise ClientError(
                    f"the input's {key} must be a positive whole number of milliseconds, not {json.dumps(v)}")
            opts[key] = min(v, MAX_HEARTBEAT_MS)
    return opts


def emit(line):
    print(json.dumps(line), flush=True)


def field(frame, key):
    """A member of a frame; None when missing or when the frame is not an object."""
    return frame.get(key) if isinstance(frame, dict) else None


def parse(message):
    """A message as JSON; one that is not JSON is kept as a JSON string."""
    text = message.decode("utf-8", "replace") if isinstance(message, bytes) else message

    def no_constant(name):
        raise ValueError(f"{name} is not JSON")

    try:
        return json.loads(text, parse_constant=no_constant)
    except (ValueError, RecursionError):
        return text


def describe_error(frame):
    """An error event as "CODE: message"."""
    def part(key):
        v = field(frame, key)
        return v if isinstance(v, str) else f"(no {key})" if v is None else json.dumps(v)
    return f"{part('code')}: {part('message')}"


def unix_now():
    return int(time.time())


def new_id():
    return uuid.uuid4().hex


# --- the connection ---
def with_agent(url, agent_id):
    """The hub's URL with agent_id in its query (percent-encoded as RFC 3986 says)."""
    sep = "&" if "?" in url else "?"
    return f"{url}{sep}agent_id={urllib.parse.quote(agent_id, safe='-._~')}"


def bypass_proxies_for_loopback():
    """Newer websockets honour *_proxy variables; a loopback hub is never proxied."""
    hosts = "127.0.0.1,localhost,::1"
    for name in ("no_proxy", "NO_PROXY"):
        old = os.environ.get(name)
        os.environ[name] = f"{old},{hosts}" if old else hosts


def check_end(closed, joined, hub_error):
    """Judges the connection's end (a ConnectionClosed): returns when the hub closed it
    after the join, raises ClientError otherwise."""
    rcvd, sent = getattr(closed, "rcvd", None), getattr(closed, "sent", None)
    we_failed = sent is not None and (rcvd is None or getattr(closed, "rcvd_then_sent", True) is False)
    if we_failed:
        # The library ended the connection: a message over the cap, or a protocol error.
        if sent.code == 1009:
            raise ClientError(f"a frame larger than {MAX_FRAME_BYTES} bytes")
        reason = f" {sent.reason}" if sent.reason else ""
        raise ClientError(f"WebSocket: the connection failed (close code {sent.code}{reason})")
    if rcvd is None:
        raise ClientError("WebSocket: the connection broke without a Close frame")
    if joined:
        return None
    before = "before space.joined" if joined is False else "before agent.registered"
    why = f" (after an error event: {hub_error})" if hub_error else ""
    raise ClientError(f"the hub closed the connection {before}{why}")


class Client:
    """One connection to a hub, in phases: registering, joining, joined."""

    def __init__(self, ws, opts, publish, deadline):
        self.ws = ws
        self.opts = opts
        self.publish = publish
        self.deadline = deadline
        self.joined = None  # None registering, False joining, True joined
        self.join_id = new_id()
        self.publish_id = None
        self.hub_error = None
        self.broken_at = None  # a send failed: read on for the hub's Close until then
        self.leave_at = None  # set at the join when leave_after_ms is given
        now = time.monotonic()
        self.every = opts["heartbeat_interval_ms"] / 1000
        self.silence = opts["heartbeat_timeout_ms"] / 1000
        self.next_beat = now + self.every
        self.last_life = now
        self.taker = Taker()

    async def send(self, event):
        """Sends one event, stamped; after a failed send nothing more is sent."""
        if self.broken_at is not None:
            return
        event["timestamp"] = unix_now()
        try:
            await asyncio.wait_for(self.ws.send(json.dumps(event)), max(self.silence, CLOSE_GRACE_S))
        except (websockets.ConnectionClosed, asyncio.TimeoutError, OSError):
            self.broken_at = time.monotonic() + CLOSE_GRACE_S

    async def heartbeat_if_due(self):
        now = time.monotonic()
        if self.broken_at is None and now >= self.next_beat:
            await self.send({"type": "agent.heartbeat"})
            self.next_beat += self.every
            if self.next_beat <= now:
                self.next_beat = now + self.every

    async def next_message(self):
        """The next message from the hub, waiting no longer than the next heartbeat,
        the silence limit, the broken-send grace or the scenario deadline; a message
        already come is taken before any of these alarms."""
        while True:
            await self.heartbeat_if_due()
            now = time.monotonic()
            alarm = self.broken_at if self.broken_at is not None else self.next_beat
            until = min(self.last_life + self.silence, self.deadline, alarm,
                        self.leave_at if self.leave_at is not None else self.deadline)
            try:
                return await asyncio.wait_for(self.ws.recv(), max(until - now, 0.001))
            except asyncio.TimeoutError:
                pass
            now = time.monotonic()
            if self.leave_at is not None and now >= self.leave_at:
                raise Leave()
            if now >= self.deadline:
                raise ClientError(f"the scenario did not end within {SCENARIO_DEADLINE_S:g} s")
            if now >= self.last_life + self.silence:
                raise ClientError(
                    f"the hub sent nothing for {self.opts['heartbeat_timeout_ms']} ms (the heartbeat timeout)")
            if self.broken_at is not None and now >= self.broken_at:
                raise ClientError("WebSocket: cannot send, and the hub did not close the connection")

    async def run(self):
        """Takes frames until the hub closes; returns normally on a normal end."""
        while True:
            try:
                message = await self.next_message()
            except websockets.ConnectionClosed as closed:
                check_end(closed, self.joined, self.hub_error)
                return
            except Leave:
                try:
                    await asyncio.wait_for(self.ws.close(), CLOSE_GRACE_S)
                except (asyncio.TimeoutError, OSError):
                    pass
                return
            self.last_life = time.monotonic()  # any frame shows the hub is alive
            frame = parse(message)
            if field(frame, "type") == "agent.heartbeat":
                continue
            emit({"received": frame})
            await self.take(frame)

    async def take(self, frame):
        kind = field(frame, "type")
        if kind == "error":
            self.refused(frame)
            return
        if self.joined is None and kind == "agent.registered":
            self.joined = False
            await self.send({"type": "space.join", "id": self.join_id, "space": self.opts["space"]})
        elif self.joined is False and kind == "space.joined" and field(frame, "id") == self.join_id:
            self.joined = True
            if self.opts["leave_after_ms"] is not None:
                self.leave_at = time.monotonic() + self.opts["leave_after_ms"] / 1000
            if self.publish:
                await self.publish_text()
        elif self.joined:
            for event in self.taker.take(frame):
                emit({"result": event})

    def refused(self, frame):
        """An error event: the end when it answers the client's join or publish."""
        rid = field(frame, "request_id")
        if (self.joined is False and rid == self.join_id) or (
                self.publish_id is not None and rid == self.publish_id):
            raise ClientError(describe_error(frame))
        if not self.joined:
            self.hub_error = describe_error(frame)  # to say why the hub may close

    async def publish_text(self):
        self.publish_id = new_id()
        o = self.opts
        data = {"from": o["agent_id"], "text": o["text"], "timestamp": unix_now()}
        await self.send({"type": "space.publish", "id": self.publish_id, "space": o["space"], "data": data})


class Taker:
    """The space's events: whole ones as they come, streamed ones at their done."""

    def __init__(self):
        self.partials = {}  # event_id -> {"space", "from", "chunks"}
        self.held = 0

    def take(self, frame):
        """The complete events one frame makes; frames it does not know make none."""
        kind, event_id, data = field(frame, "type"), field(frame, "event_id"), field(frame, "data")
        if kind == "space.event":
            text = field(data, "text")
            if isinstance(text, str):
                return [event(field(frame, "space"), field(data, "from"), text)]
        elif kind == "space.event.delta" and isinstance(event_id, str):
            chunk = field(data, "text")
            if isinstance(chunk, str):
                size = len(chunk.encode("utf-8", "surrogatepass"))
                if self.held + size > MAX_PARTIAL_BYTES:
                    raise ClientError(f"unfinished delta streams hold more than {MAX_PARTIAL_BYTES} bytes")
                p = self.partials.setdefault(
                    event_id, {"space": field(frame, "space"), "from": None, "chunks": [], "size": 0})
                if p["from"] is None:  # `from` comes with the first chunk
                    p["from"] = field(data, "from")
                p["chunks"].append(chunk)
                p["size"] += size
                self.held += size
        elif kind in ("space.event.done", "space.event.cancel") and isinstance(event_id, str):
            p = self.partials.pop(event_id, None)
            if p is not None:
                self.held -= p["size"]
                if kind == "space.event.done":  # a cancelled stream is never presented
                    return [event(p["space"], p["from"], "".join(p["chunks"]))]
        return []


def event(space, sender, text):
    return {"space": space, "from": sender, "text": text}


async def scenario(url, name, opts):
    if name not in ("join-publish", "listen"):
        raise ClientError(f"unknown scenario {name!r}; known scenarios: join-publish, listen")
    deadline = time.monotonic() + SCENARIO_DEADLINE_S
    target = with_agent(url, opts["agent_id"])
    connected = False
    try:
        async with websockets.connect(
                target, open_timeout=CONNECT_DEADLINE_S, close_timeout=CLOSE_GRACE_S,
                max_size=MAX_FRAME_BYTES, ping_interval=None, compression=None) as ws:
            connected = True
            await Client(ws, opts, name == "join-publish", deadline).run()
    except ClientError:
        raise
    except Exception as e:
        if connected:
            raise ClientError(f"WebSocket: {type(e).__name__}: {e}") from e
        raise ClientError(f"cannot connect to {target}: {type(e).__name__}: {e}") from e


def env(name):
    value = os.environ.get(name)
    if not value:
        raise ClientError(f"{name} is not set: run this driver from `agentconform run --role client`")
    return value


def main():
    url, name = env("AGENTCONFORM_URL"), env("AGENTCONFORM_SCENARIO")
    opts = read_input(env("AGENTCONFORM_INPUT"))
    bypass_proxies_for_loopback()
    asyncio.run(scenario(url, name, opts))


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # the driver reports every failure of its client
        print(json.dumps({"error": str(e) or type(e).__name__}), flush=True)
        sys.exit(1)
