// The client: one logical session with the gateway across transport
// connections. It resumes the session after a drop, re-subscribes, resends
// the asks that have no answer yet, acknowledges server frames, and sends
// heartbeats.

import { FATAL_CLOSE_CODES, SESSION_ENDED_CODES, type CloseInfo, type Connection, type ConnectionTarget, type TransportKind } from "./connection.js";
import { VolleyError } from "./errors.js";
import { Events, type ClientEvents } from "./events.js";
import { PROTOCOL_VERSION, type ClientFrame, type HelloFrame, type PingFrame, type PongFrame, type ServerFrame, type WelcomeFrame } from "./frames.js";
import { LongPollConnection } from "./longpoll.js";
import { Outbox } from "./outbox.js";
import { backoffDelay, baseUrlOf, resolveOptions, type ConnectOptions, type ResolvedOptions } from "./options.js";
import { WebSocketConnection } from "./websocket.js";

export type ClientState = "connecting" | "open" | "reconnecting" | "closed";
export type Handler = (msg: unknown) => void;

export interface AskOptions {
  /** Milliseconds to wait for the reply (default: the client's `requestTimeoutMs`). */
  timeout?: number;
}

export interface ServiceRef {
  readonly name: string;
  /** Fire and forget. Resolves once written to the transport (not when the service has it). */
  tell(msg: unknown): Promise<void>;
  /** Resolves with the service's reply; rejects with a VolleyError. */
  ask<R = unknown>(msg: unknown, options?: AskOptions): Promise<R>;
}

export interface ClientStats {
  framesReceived: number;
  reconnects: number;
  /** Pushes to a client actor nobody registered. */
  deadLetters: number;
  /** Frames received again after a resume, dropped. */
  duplicates: number;
  /** Server frames skipped over (a seq jump): lost while the session waited for a resume. */
  missedFrames: number;
}

interface PendingAsk {
  service: string;
  msg: unknown;
  deadline: number;
  /** The connection it was last written on (0: none yet). */
  writtenOn: number;
  resolve: (value: unknown) => void;
  reject: (error: VolleyError) => void;
  timer: ReturnType<typeof setTimeout>;
}

const ACK_EVERY_FRAMES = 32;
const ACK_EVERY_MS = 1000;
const DEFAULT_HEARTBEAT_MS = 15_000;
const MAX_ASK_ID = 2 ** 31 - 1;

/** Connects to a volley web gateway; resolves once the server has welcomed the session. */
export async function connect(url: string, options: ConnectOptions = {}): Promise<Client> {
  const client = new Client(url, options);
  await client.ready;
  return client;
}

export class Client {
  readonly stats: ClientStats = { framesReceived: 0, reconnects: 0, deadLetters: 0, duplicates: 0, missedFrames: 0 };
  /** Resolves at the first welcome; rejects if the client closes before. */
  readonly ready: Promise<void>;
  private readonly opts: ResolvedOptions;
  private readonly baseUrl: string;
  private readonly events = new Events();
  private readonly outbox: Outbox;
  private readonly asks = new Map<number, PendingAsk>();
  private readonly topics = new Map<string, Set<Handler>>();
  private readonly actors = new Map<string, Handler>();
  private conn: Connection | null = null;
  private kind: TransportKind;
  private stateNow: ClientState = "connecting";
  private session: string | undefined;
  private lastSeq = 0;
  private unacked = 0;
  private ackTimer: ReturnType<typeof setTimeout> | null = null;
  private heartbeatTimer: ReturnType<typeof setInterval> | null = null;
  private unansweredPings = 0;
  private pingCounter = 0;
  private reconnectTimer: ReturnType<typeof setTimeout> | null = null;
  private handshakeTimer: ReturnType<typeof setTimeout> | null = null;
  private attempt = 0;
  private everWelcomed = false;
  /** Numbers the connections, so that an ask knows which one it went out on. */
  private connectionNumber = 0;
  /** The ping after a resume whose pong releases the resending of asks. */
  private resendAfterPong: number | null = null;
  private webSocketOpened = false;
  private nextAskId = 0;
  private settleReady!: (error?: VolleyError) => void;

  constructor(url: string, options: ConnectOptions = {}) {
    this.opts = resolveOptions(options);
    this.baseUrl = baseUrlOf(url);
    this.outbox = new Outbox(this.opts.highWaterMark, this.opts.maxQueued);
    this.kind = this.opts.transport === "longpoll" ? "longpoll" : "websocket";
    this.ready = new Promise((resolve, reject) => {
      this.settleReady = (error) => (error ? reject(error) : resolve());
    });
    this.ready.catch(() => {});
    const connectTimer = setTimeout(() => {
      if (!this.everWelcomed) this.fail(new VolleyError("timeout", `no welcome within ${this.opts.connectTimeoutMs} ms`));
    }, this.opts.connectTimeoutMs);
    this.ready.then(() => clearTimeout(connectTimer), () => clearTimeout(connectTimer));
    this.openConnection();
  }

  get state(): ClientState {
    return this.stateNow;
  }
  /** The session id the server gave, once welcomed. */
  get sessionId(): string | undefined {
    return this.session;
  }
  /** The transport in use (or being tried). */
  get transport(): TransportKind {
    return this.kind;
  }

  on<E extends keyof ClientEvents>(event: E, listener: ClientEvents[E]): () => void {
    return this.events.on(event, listener);
  }

  service(name: string): ServiceRef {
    return {
      name,
      tell: (msg) => this.tell(name, msg),
      ask: <R>(msg: unknown, options?: AskOptions) => this.ask(name, msg, options) as Promise<R>,
    };
  }

  tell(service: string, msg: unknown): Promise<void> {
    if (this.stateNow === "closed") return Promise.reject(closedError());
    if (this.opts.backpressure === "reject" && this.outbox.congested) {
      return Promise.reject(new VolleyError("backpressure", "the send buffer is above its high-water mark"));
    }
    const deadline = Date.now() + this.opts.sendTimeoutMs;
    return this.outbox.push(() => ({ t: "tell", service, msg }), { deadline });
  }

  ask(service: string, msg: unknown, options: AskOptions = {}): Promise<unknown> {
    if (this.stateNow === "closed") return Promise.reject(closedError());
    if (this.opts.backpressure === "reject" && this.outbox.congested) {
      return Promise.reject(new VolleyError("backpressure", "the send buffer is above its high-water mark"));
    }
    const timeout = options.timeout ?? this.opts.requestTimeoutMs;
    const id = this.allocateAskId();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => this.settleAsk(id, new VolleyError("timeout", `no reply from ${service} within ${timeout} ms`)), timeout);
      this.asks.set(id, { service, msg, deadline: Date.now() + timeout, writtenOn: 0, resolve, reject, timer });
      this.queueAsk(id, false).catch((e: VolleyError) => this.settleAsk(id, e));
    });
  }

  /** Receives the messages published on `topic`; returns the function that stops it. */
  subscribe(topic: string, handler: Handler): () => void {
    let handlers = this.topics.get(topic);
    if (!handlers) {
      handlers = new Set();
      this.topics.set(topic, handlers);
      this.sendControl({ t: "sub", topic });
    }
    handlers.add(handler);
    return () => {
      const set = this.topics.get(topic);
      if (!set?.delete(handler) || set.size > 0) return;
      this.topics.delete(topic);
      this.sendControl({ t: "unsub", topic });
    };
  }

  /**
   * Registers the client-side actor `name` ("inbox" when omitted): the
   * server's pushes to it call `handler`. Returns the function that removes it.
   */
  actor(name: string | Handler, handler?: Handler): () => void {
    const [actorName, fn] = typeof name === "function" ? ["inbox", name] : [name, handler!];
    this.actors.set(actorName, fn);
    return () => {
      if (this.actors.get(actorName) === fn) this.actors.delete(actorName);
    };
  }

  /** Ends the session for good: pending asks and queued sends reject with `closed`. */
  close(): void {
    this.fail(closedError(), 1000, "client closed");
  }

  // ---- connection lifecycle ----

  private openConnection(): void {
    const target: ConnectionTarget = {
      kind: this.kind,
      baseUrl: this.baseUrl,
      encoding: this.kind === "longpoll" ? "json" : this.opts.encoding,
    };
    const conn = this.createConnection(target);
    this.conn = conn;
    this.connectionNumber++;
    this.resendAfterPong = null;
    conn.onframe = (frame) => {
      if (this.conn === conn) this.receive(frame);
    };
    conn.onclose = (info) => {
      if (this.conn === conn) this.lost(info);
    };
    const hello: HelloFrame = { t: "hello", v: PROTOCOL_VERSION };
    if (this.opts.token !== undefined) hello.token = this.opts.token;
    if (this.session !== undefined) {
      hello.resume = this.session;
      hello.last_seq = this.lastSeq;
    }
    this.handshakeTimer = setTimeout(() => {
      if (this.conn !== conn || this.stateNow === "open") return;
      conn.close(false);
      this.lost({ code: 4408, reason: "no welcome in time", reached: true });
    }, this.opts.connectTimeoutMs);
    conn.start(hello);
  }

  private createConnection(target: ConnectionTarget): Connection {
    if (this.opts.connectionFactory) return this.opts.connectionFactory(target);
    if (target.kind === "websocket") {
      const ws = this.opts.WebSocket ?? (globalThis as { WebSocket?: ConnectOptions["WebSocket"] }).WebSocket;
      if (ws) return new WebSocketConnection(target, ws);
      if (this.opts.transport === "websocket") throw new VolleyError("refused", "no WebSocket in this runtime");
      this.kind = "longpoll";
      target = { ...target, kind: "longpoll", encoding: "json" };
    }
    const fetchImpl = this.opts.fetch ?? globalThis.fetch?.bind(globalThis);
    if (!fetchImpl) throw new VolleyError("refused", "no fetch in this runtime for long-poll");
    return new LongPollConnection(target, fetchImpl);
  }

  private welcomed(frame: WelcomeFrame): void {
    this.clearHandshakeTimer();
    if (this.conn) this.conn.maxFrame = frame.max_frame ?? 0;
    if (!frame.resumed) this.lastSeq = 0;
    const reconnected = this.everWelcomed;
    this.everWelcomed = true;
    this.session = frame.session;
    this.stateNow = "open";
    this.attempt = 0;
    if (this.kind === "websocket") this.webSocketOpened = true;
    for (const topic of this.topics.keys()) this.sendControl({ t: "sub", topic });
    this.outbox.attach(this.conn);
    if (frame.resumed) this.resendAfterReplay();
    else this.resendAsks();
    this.startHeartbeat(frame.heartbeat_ms);
    if (reconnected) this.stats.reconnects++;
    this.events.emit("open", { session: frame.session, resumed: frame.resumed, transport: this.kind });
    this.settleReady();
  }

  private lost(info: CloseInfo): void {
    const wasOpen = this.stateNow === "open";
    this.detach();
    if (this.stateNow === "closed") return;
    if (FATAL_CLOSE_CODES.has(info.code) || (info.code === 4400 && this.session === undefined)) {
      return this.fail(new VolleyError("refused", `the server refused the connection (${info.code} ${info.reason})`));
    }
    if ((info.code === 4400 && !wasOpen) || SESSION_ENDED_CODES.has(info.code)) {
      // The gateway ended the session, or refuses one it can no longer
      // resume: the next connection starts a new one.
      this.session = undefined;
      this.lastSeq = 0;
    }
    if (!info.reached && this.kind === "websocket" && this.opts.transport === "auto" && !this.webSocketOpened) {
      // No WebSocket has ever opened (blocked on the way, or none in the
      // runtime): use long-poll from now on, at once. Once one has opened,
      // a failed attempt is an outage, and the client stays on WebSocket.
      this.kind = "longpoll";
      this.events.emit("reconnecting", { attempt: this.attempt, delayMs: 0, code: info.code, reason: info.reason });
      this.stateNow = this.everWelcomed ? "reconnecting" : "connecting";
      return this.openConnection();
    }
    const r = this.opts.reconnect;
    if (r === false || this.attempt >= r.maxAttempts) {
      return this.fail(new VolleyError("closed", `connection lost (${info.code} ${info.reason})`));
    }
    const delayMs = backoffDelay(this.attempt++, r);
    this.stateNow = this.everWelcomed ? "reconnecting" : "connecting";
    this.events.emit("reconnecting", { attempt: this.attempt, delayMs, code: info.code, reason: info.reason });
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = null;
      if (this.stateNow !== "closed") this.openConnection();
    }, delayMs);
  }

  /** Forgets the current connection (it is gone or being dropped). */
  private detach(): void {
    this.conn = null;
    this.outbox.attach(null);
    this.stopHeartbeat();
    this.clearHandshakeTimer();
    if (this.ackTimer !== null) clearTimeout(this.ackTimer);
    this.ackTimer = null;
  }

  private fail(error: VolleyError, code = 1006, reason = error.message): void {
    if (this.stateNow === "closed") return;
    const conn = this.conn;
    this.detach();
    conn?.close(true);
    this.stateNow = "closed";
    if (this.reconnectTimer !== null) clearTimeout(this.reconnectTimer);
    for (const id of [...this.asks.keys()]) this.settleAsk(id, error);
    this.outbox.rejectAll(error);
    this.settleReady(error);
    this.events.emit("close", { code, reason, error });
  }

  /** Drops a connection that stopped answering, as if it had closed. */
  private dropDead(): void {
    const conn = this.conn;
    if (!conn) return;
    conn.close(false);
    this.lost({ code: 4408, reason: "no answer to pings", reached: true });
  }

  // ---- frames in ----

  private receive(frame: ServerFrame): void {
    this.stats.framesReceived++;
    this.unansweredPings = 0;
    if (this.stateNow !== "open") {
      if (frame.t === "welcome") return this.welcomed(frame);
      if (frame.t === "error") return this.lost({ code: 4400, reason: `${frame.code}: ${frame.text ?? ""}`, reached: true });
    }
    if (frame.t === "ping") return this.sendControl({ t: "pong", n: frame.n });
    if (frame.t === "pong" && frame.n === this.resendAfterPong) {
      this.resendAfterPong = null;
      return this.resendAsks();
    }
    if (frame.t === "pong" || frame.t === "welcome") return;
    if (!this.sequenced(frame.seq)) return;
    this.dispatch(frame);
  }

  /** Tracks the frame's seq; false for a frame already seen (resent after a resume). */
  private sequenced(seq: number | undefined): boolean {
    if (typeof seq !== "number") return true;
    if (seq <= this.lastSeq) {
      this.stats.duplicates++;
      return false;
    }
    if (seq > this.lastSeq + 1) this.stats.missedFrames += seq - this.lastSeq - 1;
    this.lastSeq = seq;
    this.unacked++;
    if (this.unacked >= ACK_EVERY_FRAMES) this.sendAck();
    else if (this.ackTimer === null) this.ackTimer = setTimeout(() => this.sendAck(), ACK_EVERY_MS);
    return true;
  }

  private dispatch(frame: Exclude<ServerFrame, WelcomeFrame | PingFrame | PongFrame>): void {
    switch (frame.t) {
      case "reply":
        return this.settleAsk(frame.id, undefined, frame.msg);
      case "error":
        if (typeof frame.id === "number") return this.settleAsk(frame.id, new VolleyError(frame.code, frame.text ?? ""));
        this.events.emit("error", new VolleyError(frame.code, frame.text ?? ""));
        return;
      case "pub":
        for (const handler of [...(this.topics.get(frame.topic) ?? [])]) this.callHandler(handler, frame.msg);
        return;
      case "push": {
        const handler = this.actors.get(frame.to);
        if (handler) return this.callHandler(handler, frame.msg);
        this.stats.deadLetters++;
        this.events.emit("deadletter", { to: frame.to, msg: frame.msg });
        return;
      }
    }
  }

  private callHandler(handler: Handler, msg: unknown): void {
    try {
      handler(msg);
    } catch (e) {
      // A throwing handler must not take the session down with it.
      this.events.emit("error", new VolleyError("internal", `a handler threw: ${String(e)}`));
    }
  }

  // ---- frames out ----

  private allocateAskId(): number {
    do {
      this.nextAskId = this.nextAskId >= MAX_ASK_ID ? 1 : this.nextAskId + 1;
    } while (this.asks.has(this.nextAskId));
    return this.nextAskId;
  }

  private queueAsk(id: number, front: boolean): Promise<void> {
    return this.outbox.push(
      () => {
        const ask = this.asks.get(id)!;
        ask.writtenOn = this.connectionNumber;
        const remaining = Math.max(1, Math.round(ask.deadline - Date.now()));
        return { t: "ask", id, service: ask.service, msg: ask.msg, timeout_ms: remaining };
      },
      { deadline: null, key: id, front },
    );
  }

  /**
   * A resumed session first gets again the frames the server held past
   * `last_seq`, replies included, and answers a ping only after them (it
   * sends in order). So the client pings, and resends only the asks still
   * without an answer when the pong comes: those the server never
   * answered. This spares most repeats; an ask the server got and is
   * still working on is repeated all the same (at least once).
   */
  private resendAfterReplay(): void {
    this.resendAfterPong = ++this.pingCounter;
    this.sendControl({ t: "ping", n: this.resendAfterPong });
  }

  /** Every ask without an answer, written on an earlier connection, goes out again (at least once), ahead of queued sends. */
  private resendAsks(): void {
    const current = this.connectionNumber;
    const ids = [...this.asks.entries()]
      .filter(([id, ask]) => ask.writtenOn !== current && !this.outbox.has(id))
      .map(([id]) => id)
      .reverse();
    for (const id of ids) this.queueAsk(id, true).catch((e: VolleyError) => this.settleAsk(id, e));
  }

  private settleAsk(id: number, error: VolleyError | undefined, value?: unknown): void {
    const ask = this.asks.get(id);
    if (!ask) return; // a late or duplicate answer
    this.asks.delete(id);
    clearTimeout(ask.timer);
    this.outbox.remove(id);
    if (error) ask.reject(error);
    else ask.resolve(value);
  }

  /** Protocol frames that skip the outbox; dropped while disconnected (the welcome redoes what matters). */
  private sendControl(frame: ClientFrame): void {
    if (this.stateNow !== "open" || !this.conn) return;
    try {
      this.conn.send(frame);
    } catch {
      // The connection is failing; its close event follows.
    }
  }

  private sendAck(): void {
    if (this.ackTimer !== null) clearTimeout(this.ackTimer);
    this.ackTimer = null;
    this.unacked = 0;
    this.sendControl({ t: "ack", seq: this.lastSeq });
  }

  private startHeartbeat(serverMs: number | undefined): void {
    this.stopHeartbeat();
    const every = this.opts.heartbeatMs ?? serverMs ?? DEFAULT_HEARTBEAT_MS;
    this.heartbeatTimer = setInterval(() => {
      if (this.unansweredPings >= this.opts.maxMissedPongs) return this.dropDead();
      this.unansweredPings++;
      this.sendControl({ t: "ping", n: ++this.pingCounter });
    }, every);
  }

  private stopHeartbeat(): void {
    if (this.heartbeatTimer !== null) clearInterval(this.heartbeatTimer);
    this.heartbeatTimer = null;
    this.unansweredPings = 0;
  }

  private clearHandshakeTimer(): void {
    if (this.handshakeTimer !== null) clearTimeout(this.handshakeTimer);
    this.handshakeTimer = null;
  }
}

function closedError(): VolleyError {
  return new VolleyError("closed", "the client is closed");
}

export type { ClientEvents };
