// The HTTP long-poll transport, for networks that block WebSockets: the
// hello is POSTed to `lp/open` (its answer is the welcome), frames go out
// in batches POSTed to `lp/send`, and a GET on `lp/recv` held open by the
// server brings frames in. JSON only.

import { checkFrameSize, encodedSize } from "./codec.js";
import type { CloseInfo, Connection, ConnectionTarget } from "./connection.js";
import { isFrame, type ClientFrame, type HelloFrame, type ServerFrame } from "./frames.js";

export type FetchLike = typeof fetch;

/** The WebSocket close code that matches a long-poll HTTP status. */
function closeCodeForStatus(status: number): number {
  switch (status) {
    case 400: return 4400;
    case 401: return 4401;
    case 403: return 4403;
    case 404: return 4404;
    case 410: return 1000; // the session has ended
    case 413: return 1009;
    case 429: return 4429;
    default: return 1011;
  }
}

export class LongPollConnection implements Connection {
  onframe: (frame: ServerFrame) => void = () => {};
  onclose: (info: CloseInfo) => void = () => {};
  maxFrame = 0;
  private session = "";
  private lastSeq = 0;
  private outbox: string[] = [];
  private outboxBytes = 0;
  private inflightBytes = 0;
  private sending = false;
  private reached = false;
  private ended = false;
  private readonly abort = new AbortController();

  constructor(
    private readonly target: ConnectionTarget,
    private readonly fetchImpl: FetchLike,
  ) {}

  get bufferedAmount(): number {
    return this.outboxBytes + this.inflightBytes;
  }

  start(hello: HelloFrame): void {
    void this.open(hello);
  }

  private async open(hello: HelloFrame): Promise<void> {
    const frames = await this.request(`/lp/open?enc=json`, { method: "POST", body: JSON.stringify(hello) }, true);
    if (!frames) return;
    this.reached = true;
    const welcome = frames[0];
    if (!welcome || welcome.t !== "welcome") return this.end({ code: 4400, reason: "no welcome", reached: true });
    this.session = welcome.session;
    this.deliver(frames);
    void this.receiveLoop();
    this.flush();
  }

  private async receiveLoop(): Promise<void> {
    while (!this.ended) {
      const q = `/lp/recv?session=${encodeURIComponent(this.session)}&ack=${this.lastSeq}`;
      const frames = await this.request(q, { method: "GET" });
      if (!frames) return;
      this.deliver(frames);
    }
  }

  private deliver(frames: ServerFrame[]): void {
    for (const frame of frames) {
      if (this.ended) return;
      const seq = (frame as { seq?: number }).seq;
      if (typeof seq === "number" && seq > this.lastSeq) this.lastSeq = seq;
      this.onframe(frame);
    }
  }

  send(frame: ClientFrame): void {
    const text = JSON.stringify(frame);
    // The body of lp/send is an array: its brackets count too.
    checkFrameSize(text, this.maxFrame > 0 ? this.maxFrame - 2 : 0);
    this.outbox.push(text);
    this.outboxBytes += text.length;
    // Frames sent in the same tick go out in one request.
    queueMicrotask(() => this.flush());
  }

  private flush(): void {
    if (this.sending || this.ended || !this.session || this.outbox.length === 0) return;
    const batch = this.takeBatch();
    this.inflightBytes = batch.reduce((n, t) => n + t.length, 0);
    this.outboxBytes -= this.inflightBytes;
    this.sending = true;
    const body = `[${batch.join(",")}]`;
    void this.request(`/lp/send?session=${encodeURIComponent(this.session)}`, { method: "POST", body }).then((ok) => {
      this.sending = false;
      this.inflightBytes = 0;
      if (ok) this.flush();
    });
  }

  /** The frames of the next lp/send: as many as fit in one body of at most `maxFrame` bytes (one at least). */
  private takeBatch(): string[] {
    if (this.maxFrame <= 0) return this.outbox.splice(0);
    let size = 2;
    let count = 0;
    for (const text of this.outbox) {
      const more = (count > 0 ? 1 : 0) + encodedSize(text);
      if (count > 0 && size + more > this.maxFrame) break;
      size += more;
      count++;
    }
    return this.outbox.splice(0, count);
  }

  /** One HTTP exchange; the frames of its answer (none for 204), or null once the connection is over. */
  private async request(pathAndQuery: string, init: RequestInit, opening = false): Promise<ServerFrame[] | null> {
    if (this.ended) return null;
    let response: Response;
    try {
      response = await this.fetchImpl(`${this.target.baseUrl}${pathAndQuery}`, {
        ...init,
        headers: init.body ? { "content-type": "application/json" } : undefined,
        signal: this.abort.signal,
        cache: "no-store",
      });
    } catch (e) {
      this.end({ code: 1006, reason: `long-poll request failed: ${String(e)}`, reached: this.reached });
      return null;
    }
    if (!response.ok) {
      const text = await response.text().catch(() => "");
      // A 404 at open refuses a resume (the session is gone), as close 4400 does on a WebSocket.
      const code = opening && response.status === 404 ? 4400 : closeCodeForStatus(response.status);
      this.end({ code, reason: text || `HTTP ${response.status}`, reached: true });
      return null;
    }
    if (response.status === 204) return [];
    try {
      const body: unknown = await response.json();
      const list = Array.isArray(body) ? body : [body];
      if (!list.every(isFrame)) throw new Error("not frames");
      return list as ServerFrame[];
    } catch (e) {
      if (this.ended) return null;
      this.end({ code: 4400, reason: `bad long-poll answer: ${String(e)}`, reached: true });
      return null;
    }
  }

  close(final: boolean): void {
    if (this.ended) return;
    this.ended = true;
    this.abort.abort();
    if (final && this.session) {
      const url = `${this.target.baseUrl}/lp/close?session=${encodeURIComponent(this.session)}`;
      this.fetchImpl(url, { method: "POST" }).catch(() => {});
    }
  }

  private end(info: CloseInfo): void {
    if (this.ended) return;
    this.ended = true;
    this.abort.abort();
    this.onclose(info);
  }
}
