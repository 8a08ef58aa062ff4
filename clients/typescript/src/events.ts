// The client's events, with typed listeners.

import type { TransportKind } from "./connection.js";
import type { VolleyError } from "./errors.js";

export interface ClientEvents {
  /** A session was welcomed: the first one, or after a reconnect (`resumed` says whether the server kept it). */
  open: (e: { session: string; resumed: boolean; transport: TransportKind }) => void;
  /** The connection dropped; another attempt follows after `delayMs`. */
  reconnecting: (e: { attempt: number; delayMs: number; code: number; reason: string }) => void;
  /** The client closed for good (by `close()`, a refusal, or reconnects given up). */
  close: (e: { code: number; reason: string; error: VolleyError }) => void;
  /** An error frame with no ask id, or a handler that threw. */
  error: (e: VolleyError) => void;
  /** A push to a client actor that nobody registered. */
  deadletter: (e: { to: string; msg: unknown }) => void;
}

type Listeners = { [E in keyof ClientEvents]: Set<ClientEvents[E]> };

export class Events {
  private readonly listeners: Listeners = {
    open: new Set(),
    reconnecting: new Set(),
    close: new Set(),
    error: new Set(),
    deadletter: new Set(),
  };

  on<E extends keyof ClientEvents>(event: E, listener: ClientEvents[E]): () => void {
    this.listeners[event].add(listener);
    return () => this.listeners[event].delete(listener);
  }

  emit<E extends keyof ClientEvents>(event: E, arg: Parameters<ClientEvents[E]>[0]): void {
    for (const listener of [...this.listeners[event]]) {
      try {
        (listener as (a: typeof arg) => void)(arg);
      } catch {
        // A listener's failure is its own; the client goes on.
      }
    }
  }
}
