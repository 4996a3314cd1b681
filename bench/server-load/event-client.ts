import http from "node:http";
import { type Transition, wallNow } from "./options.ts";

/** The first client to receive each (run, transition id): what the others and the log are compared with. */
export const firstSeen = new Map<string, Transition>();
/** ms from a transition's `at` to a client reading it, every client, every transition. */
export const delivery: number[] = [];
/** The same, by the state the transition enters. */
export const deliveryTo = new Map<string, number[]>();

/** An SSE client of GET /api/events: a small parser of the text/event-stream format. */
export class EventClient {
  /** Per run, the transition ids received, in order of arrival. */
  readonly runs = new Map<string, number[]>();
  received = 0;
  /** Transitions whose content differs from the first copy any client received. */
  differing = 0;
  /** `ready` events after the first one: the server restarted the stream from "now" (events lost). */
  resyncs = 0;
  /** Event ids whose sequence number is not the previous one + 1 (the feed skipped or repeated). */
  seqBreaks = 0;
  boot: string | undefined;
  lastSeq = -1;
  /** When (wall clock) it read its latest transition. */
  lastReadAt = 0;
  /** Why the stream ended before the bench closed it. */
  dropped: string | undefined;
  #closing = false;
  #req: http.ClientRequest | undefined;
  #buffer = "";
  #event = "message";
  #data: string[] = [];
  #id = "";

  constructor(
    readonly index: number,
    readonly ready: Promise<void>,
    private readonly onReady: () => void,
  ) {}

  static open(base: string, index: number): EventClient {
    let onReady!: () => void;
    const ready = new Promise<void>((r) => (onReady = r));
    const client = new EventClient(index, ready, onReady);
    client.#connect(base);
    return client;
  }

  #connect(base: string): void {
    // Its own connection, as every browser tab has.
    const req = http.get(`${base}/api/events`, { agent: false, headers: { accept: "text/event-stream" } }, (res) => {
      if (res.statusCode !== 200) {
        this.dropped = `status ${res.statusCode}`;
        res.resume();
        return;
      }
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => this.#feed(chunk, wallNow()));
      res.on("end", () => {
        if (!this.#closing) this.dropped ??= "the server ended the stream";
      });
      res.on("error", (error) => {
        if (!this.#closing) this.dropped ??= String(error);
      });
    });
    req.on("error", (error) => {
      if (!this.#closing) this.dropped ??= String(error);
    });
    this.#req = req;
  }

  close(): void {
    this.#closing = true;
    this.#req?.destroy();
  }

  #feed(chunk: string, receivedAt: number): void {
    this.#buffer += chunk;
    let start = 0;
    for (;;) {
      const end = this.#buffer.indexOf("\n", start);
      if (end < 0) break;
      let line = this.#buffer.slice(start, end);
      start = end + 1;
      if (line.endsWith("\r")) line = line.slice(0, -1);
      if (line === "") {
        if (this.#data.length > 0) this.#dispatch(this.#event, this.#data.join("\n"), this.#id, receivedAt);
        this.#event = "message";
        this.#data = [];
        continue;
      }
      if (line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? "" : line.slice(colon + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      if (field === "data") this.#data.push(value);
      else if (field === "event") this.#event = value;
      else if (field === "id") this.#id = value;
    }
    this.#buffer = this.#buffer.slice(start);
  }

  #dispatch(event: string, data: string, id: string, receivedAt: number): void {
    const dot = id.lastIndexOf(".");
    const boot = id.slice(0, dot);
    const seq = Number(id.slice(dot + 1));
    if (event === "ready") {
      if (this.boot === undefined) {
        this.boot = boot;
        this.lastSeq = seq;
        this.onReady();
      } else {
        this.resyncs++;
        this.lastSeq = seq;
      }
      return;
    }
    if (event !== "transition") return;
    if (boot !== this.boot || seq !== this.lastSeq + 1) this.seqBreaks++;
    this.lastSeq = seq;
    const t = JSON.parse(data) as Transition;
    this.received++;
    this.lastReadAt = receivedAt;
    delivery.push(receivedAt - t.at);
    let byTo = deliveryTo.get(t.to);
    if (byTo === undefined) {
      byTo = [];
      deliveryTo.set(t.to, byTo);
    }
    byTo.push(receivedAt - t.at);
    const key = `${t.runId}#${t.id}`;
    const first = firstSeen.get(key);
    if (first === undefined) firstSeen.set(key, { runId: t.runId, id: t.id, at: t.at, from: t.from, to: t.to });
    else if (first.at !== t.at || first.from !== t.from || first.to !== t.to) this.differing++;
    let ids = this.runs.get(t.runId);
    if (ids === undefined) {
      ids = [];
      this.runs.set(t.runId, ids);
    }
    ids.push(t.id);
  }
}
