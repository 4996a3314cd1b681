/**
 * Server-Sent Events: a `text/event-stream` response fed by an async producer. Each event is
 * `id:`, `event:` and one `data:` line of JSON; a comment line every `heartbeatMs` keeps proxies
 * from closing an idle connection. The producer gets a signal that fires when the client goes
 * away (the request's signal, or the body being cancelled) and the stream closes when it returns.
 */

/** One event. */
export interface SseEvent {
  /** What a client sends back as Last-Event-ID to resume after this event. */
  id: string;
  event: string;
  data: unknown;
}

/**
 * What a producer writes to: an event, or one already in its wire form ({@link encodeEvent}) —
 * what a producer sends to many streams is formatted once, not once per stream.
 */
export type SseSend = (event: SseEvent | Uint8Array) => void;

/** Options of {@link sseResponse}. */
export interface SseOptions {
  /** @default 15000 */
  heartbeatMs?: number;
  /** The request's signal: fires when the client disconnects. */
  signal?: AbortSignal;
  /** Reports a producer that failed (the stream then just ends). */
  onError?: (error: unknown) => void;
}

/** A streaming response whose events come from `produce`. */
export function sseResponse(
  produce: (send: SseSend, signal: AbortSignal) => Promise<void>,
  options: SseOptions = {},
): Response {
  const abort = new AbortController();
  let heartbeat: ReturnType<typeof setInterval> | undefined;
  const onRequestAbort = () => abort.abort();
  const stop = () => {
    clearInterval(heartbeat);
    options.signal?.removeEventListener("abort", onRequestAbort);
  };
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      let open = true;
      const write = (chunk: Uint8Array) => {
        if (!open) return;
        try {
          controller.enqueue(chunk);
        } catch {
          open = false;
          abort.abort();
        }
      };
      options.signal?.addEventListener("abort", onRequestAbort, { once: true });
      if (options.signal?.aborted) abort.abort();
      // Reconnect soon after a dropped connection (the browser's default is 3 s).
      write(encoder.encode("retry: 1000\n\n"));
      heartbeat = setInterval(() => write(encoder.encode(": heartbeat\n\n")), options.heartbeatMs ?? 15_000);
      heartbeat.unref?.();
      const send: SseSend = (event) => write(event instanceof Uint8Array ? event : encodeEvent(event));
      produce(send, abort.signal)
        .catch((error: unknown) => {
          if (!abort.signal.aborted) options.onError?.(error);
        })
        .finally(() => {
          stop();
          if (open) {
            open = false;
            try {
              controller.close();
            } catch {
              // Already cancelled by the client.
            }
          }
        });
    },
    cancel() {
      stop();
      abort.abort();
    },
  });
  return new Response(body, {
    status: 200,
    headers: {
      "Content-Type": "text/event-stream; charset=utf-8",
      "Cache-Control": "no-cache, no-transform",
      Connection: "keep-alive",
      "X-Accel-Buffering": "no",
    },
  });
}

const encoder = new TextEncoder();

/** The wire form of one event. */
export function formatEvent(event: SseEvent): string {
  return `id: ${event.id}\nevent: ${event.event}\ndata: ${JSON.stringify(event.data)}\n\n`;
}

/** The wire form of one event, encoded: it can be sent to any number of streams (none alters it). */
export function encodeEvent(event: SseEvent): Uint8Array {
  return encoder.encode(formatEvent(event));
}

/**
 * Resolves after `ms`, or at once when `signal` fires or `wake` is called. The abort listener is
 * added once per signal (a loop that sleeps after every event adds and removes none per sleep).
 */
export class Wakeup {
  #pending: (() => void) | undefined;
  #flag = false;
  #signal: AbortSignal | undefined;
  readonly #onAbort = () => this.#pending?.();

  /** Wakes the current (or next) {@link Wakeup.sleep}. */
  wake(): void {
    this.#flag = true;
    this.#pending?.();
  }

  sleep(ms: number, signal: AbortSignal): Promise<void> {
    if (this.#flag || signal.aborted) {
      this.#flag = false;
      return Promise.resolve();
    }
    if (this.#signal !== signal) {
      this.#signal?.removeEventListener("abort", this.#onAbort);
      this.#signal = signal;
      signal.addEventListener("abort", this.#onAbort, { once: true });
    }
    return new Promise((resolve) => {
      const timer = setTimeout(() => this.#pending?.(), ms);
      this.#pending = () => {
        clearTimeout(timer);
        this.#pending = undefined;
        this.#flag = false;
        resolve();
      };
    });
  }
}
