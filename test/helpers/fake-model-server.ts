import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A local model server for tests: it speaks the OpenAI chat-completions wire format
 * (`POST /v1/chat/completions`) and the Anthropic Messages format (`POST /v1/messages`), streamed
 * (SSE) or not, as the real APIs do, so the AI SDK providers run unchanged against it.
 *
 * Each request takes the next reply of the script ({@link FakeModelServer.script}): an answer
 * (text and/or tool calls) or a fault (an error status, a stream cut after its 200, a slow
 * stream, a context-length error with each vendor's real body). When the script is empty the
 * fallback answers ({@link FakeModelServer.respond}), else an echo of the prompt. Every request
 * is recorded (path, parsed body, time, prompt), so tests can count them exactly.
 *
 * @example
 * const server = await FakeModelServer.start();
 * server.script({ status: 429, retryAfterS: 1 }, { text: "hello" });
 * const model = openai("gpt-4o-mini", { baseURL: `${server.url}/v1`, apiKey: "test" });
 * // … server.requests.length === 2
 * await server.close();
 */

/** A tool call the fake model makes. */
export interface ScriptedToolCall {
  name: string;
  args: unknown;
  /** @default "call_<n>" (OpenAI) / "toolu_<n>" (Anthropic) */
  id?: string;
}

/** A successful answer. */
export interface Answer {
  text?: string;
  toolCalls?: ScriptedToolCall[];
  /** @default { input: 10, output: words of the text + tool calls } */
  usage?: { input: number; output: number };
  /** How the text is streamed. @default word by word */
  chunks?: string[];
  /** Milliseconds before each streamed chunk (before the body when not streaming). @default 0 */
  delayMs?: number;
}

/** A failed request, or a response that goes wrong. */
export type Fault =
  /** An error status with the vendor's error body; 529 is Anthropic's `overloaded_error`. */
  | { status: number; message?: string; retryAfterS?: number; retryAfterMs?: number; retryAfterDate?: Date }
  /**
   * 200, headers and part of the answer, then the connection is destroyed (`clean`: the response
   * ends normally but before the model's finish).
   */
  | { kind: "cut"; text?: string; clean?: boolean }
  /** The answer (default "slow answer") with `delayMs` before each chunk. */
  | { kind: "slow"; delayMs: number; text?: string }
  /** 400 with the vendor's context-length error body. */
  | { kind: "context" };

export type Reply = Answer | Fault;

/** Computes a reply from the request (and whatever else the test knows). */
export type Responder = (request: RecordedRequest) => Reply;

/** A request the server received. */
export interface RecordedRequest {
  path: string;
  format: "openai" | "anthropic";
  /** The parsed JSON body. */
  body: any;
  headers: IncomingMessage["headers"];
  /** `Date.now()` when it arrived. */
  at: number;
  stream: boolean;
  /** The text of the last user message (empty when it holds only tool results). */
  prompt: string;
}

export class FakeModelServer {
  /** `http://127.0.0.1:<port>`; the APIs live under `/v1`. */
  readonly url: string;
  /** Every request, in arrival order. */
  readonly requests: RecordedRequest[] = [];
  readonly #server: Server;
  readonly #queue: (Reply | Responder)[] = [];
  readonly #closing = new AbortController();
  readonly #waiters = new Set<() => void>();
  #fallback: Responder | undefined;
  #ids = 0;

  private constructor(server: Server, url: string) {
    this.#server = server;
    this.url = url;
  }

  /** Starts a server on a free port of 127.0.0.1. */
  static async start(): Promise<FakeModelServer> {
    let self: FakeModelServer | undefined;
    const server = createServer((req, res) => {
      self?.handle(req, res).catch((error: unknown) => {
        if (!res.headersSent) res.writeHead(500, { "content-type": "text/plain" });
        res.end(String(error));
      });
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(0, "127.0.0.1", resolve);
    });
    const { port } = server.address() as AddressInfo;
    self = new FakeModelServer(server, `http://127.0.0.1:${port}`);
    return self;
  }

  /** Queues replies: each request takes the next one. */
  script(...replies: (Reply | Responder)[]): this {
    this.#queue.push(...replies);
    return this;
  }

  /** Answers every request once the script is used up. */
  respond(responder: Responder): this {
    this.#fallback = responder;
    return this;
  }

  /** Forgets the requests, the script and the fallback (between tests). */
  reset(): void {
    this.requests.length = 0;
    this.#queue.length = 0;
    this.#fallback = undefined;
  }

  /** Requests whose prompt is `prompt`. */
  requestsFor(prompt: string): RecordedRequest[] {
    return this.requests.filter((r) => r.prompt === prompt);
  }

  /** Resolves once `count` requests (in all, or matching `where`) have arrived. */
  async waitForRequests(
    count: number,
    { where, timeoutMs = 10_000 }: { where?: (r: RecordedRequest) => boolean; timeoutMs?: number } = {},
  ): Promise<void> {
    const enough = () => (where ? this.requests.filter(where) : this.requests).length >= count;
    if (enough()) return;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiters.delete(check);
        reject(new Error(`timed out waiting for ${count} requests (got ${this.requests.length})`));
      }, timeoutMs);
      const check = () => {
        if (!enough()) return;
        clearTimeout(timer);
        this.#waiters.delete(check);
        resolve();
      };
      this.#waiters.add(check);
    });
  }

  /** Stops the server, dropping responses in progress. */
  async close(): Promise<void> {
    this.#closing.abort();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? "/").split("?")[0] ?? "/";
    const format = path === "/v1/chat/completions" ? "openai" : path === "/v1/messages" ? "anthropic" : undefined;
    const raw = await readBody(req);
    if (req.method !== "POST" || !format) {
      res.writeHead(404, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { message: `no route ${req.method} ${path}` } }));
      return;
    }
    const body = JSON.parse(raw || "{}");
    const request: RecordedRequest = {
      path,
      format,
      body,
      headers: req.headers,
      at: Date.now(),
      stream: body.stream === true,
      prompt: promptOf(format, body),
    };
    this.requests.push(request);
    for (const check of [...this.#waiters]) check();
    const next = this.#queue.shift() ?? this.#fallback ?? ((r: RecordedRequest) => ({ text: `echo: ${r.prompt}` }));
    const reply = typeof next === "function" ? next(request) : next;
    await this.#reply(request, reply, res);
  }

  async #reply(request: RecordedRequest, reply: Reply, res: ServerResponse): Promise<void> {
    if ("status" in reply) return this.#error(request.format, reply, res);
    if ("kind" in reply && reply.kind === "context") return this.#contextError(request.format, res);
    if ("kind" in reply && reply.kind === "slow") {
      return this.#answer(request, { text: reply.text ?? "slow answer", delayMs: reply.delayMs }, res);
    }
    if ("kind" in reply && reply.kind === "cut") {
      return this.#answer(
        request,
        { text: reply.text ?? "this answer is cut short" },
        res,
        reply.clean ? "end" : "destroy",
      );
    }
    return this.#answer(request, reply as Answer, res);
  }

  #error(format: "openai" | "anthropic", fault: Extract<Fault, { status: number }>, res: ServerResponse): void {
    const { status } = fault;
    const message = fault.message ?? defaultMessage(status);
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (fault.retryAfterS !== undefined) headers["retry-after"] = String(fault.retryAfterS);
    if (fault.retryAfterMs !== undefined) headers["retry-after-ms"] = String(fault.retryAfterMs);
    if (fault.retryAfterDate !== undefined) headers["retry-after"] = fault.retryAfterDate.toUTCString();
    const body =
      format === "openai"
        ? {
            error: {
              message,
              type: status === 429 ? "requests" : status >= 500 ? "server_error" : "invalid_request_error",
              param: null,
              code: status === 429 ? "rate_limit_exceeded" : status === 401 ? "invalid_api_key" : null,
            },
          }
        : { type: "error", error: { type: anthropicErrorType(status), message } };
    res.writeHead(status, headers);
    res.end(JSON.stringify(body));
  }

  #contextError(format: "openai" | "anthropic", res: ServerResponse): void {
    // The bodies the vendors really send.
    const body =
      format === "openai"
        ? {
            error: {
              message:
                "This model's maximum context length is 128000 tokens. However, your messages resulted in 130415 tokens. Please reduce the length of the messages.",
              type: "invalid_request_error",
              param: "messages",
              code: "context_length_exceeded",
            },
          }
        : {
            type: "error",
            error: { type: "invalid_request_error", message: "prompt is too long: 208310 tokens > 200000 maximum" },
          };
    res.writeHead(400, { "content-type": "application/json" });
    res.end(JSON.stringify(body));
  }

  async #answer(request: RecordedRequest, answer: Answer, res: ServerResponse, cut?: "destroy" | "end"): Promise<void> {
    const id = ++this.#ids;
    const text = answer.text ?? "";
    const calls = (answer.toolCalls ?? []).map((call, i) => ({
      ...call,
      id: call.id ?? `${request.format === "openai" ? "call" : "toolu"}_${id}_${i}`,
    }));
    const usage = answer.usage ?? { input: 10, output: words(text) + calls.length };
    const model = String(request.body.model ?? "fake-model");
    const delay = answer.delayMs ?? 0;
    let chunks = answer.chunks ?? (text.match(/\s*\S+/g) as string[] | null) ?? (text ? [text] : []);
    // A cut answer sends the first half of its text, then stops.
    if (cut) chunks = chunks.slice(0, Math.max(1, Math.ceil(chunks.length / 2)));

    if (!request.stream) {
      if (delay > 0) await this.#sleep(delay);
      const json =
        request.format === "openai"
          ? openaiJson(id, model, text, calls, usage)
          : anthropicJson(id, model, text, calls, usage);
      const payload = JSON.stringify(json);
      if (res.destroyed) return;
      if (cut) {
        res.writeHead(200, { "content-type": "application/json", "content-length": String(payload.length) });
        res.write(payload.slice(0, Math.floor(payload.length / 2)));
        await this.#sleep(10);
        res.destroy();
        return;
      }
      res.writeHead(200, { "content-type": "application/json" });
      res.end(payload);
      return;
    }

    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
    res.flushHeaders();
    const events =
      request.format === "openai"
        ? openaiEvents(id, model, chunks, calls, usage, request.body.stream_options?.include_usage === true)
        : anthropicEvents(id, model, chunks, calls, usage);
    // Cut: the text chunks only (message_start and the first half of the text), no finish.
    const upTo = cut ? events.findIndex((e) => e.finish) : events.length;
    for (const event of events.slice(0, upTo)) {
      if (event.text && delay > 0) await this.#sleep(delay);
      if (res.destroyed || this.#closing.signal.aborted) return;
      res.write(event.data);
    }
    if (cut === "destroy") {
      await this.#sleep(10);
      res.destroy();
    } else {
      res.end();
    }
  }

  #sleep(ms: number): Promise<void> {
    const signal = this.#closing.signal;
    return new Promise((resolve) => {
      if (signal.aborted) return resolve();
      const timer = setTimeout(() => {
        signal.removeEventListener("abort", stop);
        resolve();
      }, ms);
      const stop = () => {
        clearTimeout(timer);
        resolve();
      };
      signal.addEventListener("abort", stop, { once: true });
    });
  }
}

/** One SSE event: its bytes, whether it carries text, whether it is where the model finishes. */
interface SseEvent {
  data: string;
  text?: boolean;
  finish?: boolean;
}

function openaiEvents(
  id: number,
  model: string,
  chunks: string[],
  calls: Required<ScriptedToolCall>[],
  usage: { input: number; output: number },
  includeUsage: boolean,
): SseEvent[] {
  const base = { id: `chatcmpl-${id}`, object: "chat.completion.chunk", created: 1_700_000_000, model };
  const chunk = (delta: object, finish: string | null = null) =>
    `data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] })}\n\n`;
  const out: SseEvent[] = [{ data: chunk({ role: "assistant", content: "" }) }];
  for (const text of chunks) out.push({ data: chunk({ content: text }), text: true });
  calls.forEach((call, index) => {
    const args = JSON.stringify(call.args);
    const half = Math.ceil(args.length / 2);
    out.push({
      data: chunk({
        tool_calls: [{ index, id: call.id, type: "function", function: { name: call.name, arguments: "" } }],
      }),
      text: true,
    });
    out.push({ data: chunk({ tool_calls: [{ index, function: { arguments: args.slice(0, half) } }] }) });
    out.push({ data: chunk({ tool_calls: [{ index, function: { arguments: args.slice(half) } }] }) });
  });
  out.push({ data: chunk({}, calls.length > 0 ? "tool_calls" : "stop"), finish: true });
  if (includeUsage) {
    out.push({
      data: `data: ${JSON.stringify({
        ...base,
        choices: [],
        usage: {
          prompt_tokens: usage.input,
          completion_tokens: usage.output,
          total_tokens: usage.input + usage.output,
        },
      })}\n\n`,
    });
  }
  out.push({ data: "data: [DONE]\n\n" });
  return out;
}

function openaiJson(
  id: number,
  model: string,
  text: string,
  calls: Required<ScriptedToolCall>[],
  usage: { input: number; output: number },
): object {
  return {
    id: `chatcmpl-${id}`,
    object: "chat.completion",
    created: 1_700_000_000,
    model,
    choices: [
      {
        index: 0,
        message: {
          role: "assistant",
          content: text || (calls.length > 0 ? null : ""),
          refusal: null,
          ...(calls.length > 0 && {
            tool_calls: calls.map((c) => ({
              id: c.id,
              type: "function",
              function: { name: c.name, arguments: JSON.stringify(c.args) },
            })),
          }),
        },
        logprobs: null,
        finish_reason: calls.length > 0 ? "tool_calls" : "stop",
      },
    ],
    usage: { prompt_tokens: usage.input, completion_tokens: usage.output, total_tokens: usage.input + usage.output },
  };
}

function anthropicEvents(
  id: number,
  model: string,
  chunks: string[],
  calls: Required<ScriptedToolCall>[],
  usage: { input: number; output: number },
): SseEvent[] {
  const event = (type: string, data: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
  const out: SseEvent[] = [
    {
      data: event("message_start", {
        message: {
          id: `msg_${id}`,
          type: "message",
          role: "assistant",
          model,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: { input_tokens: usage.input, output_tokens: 1 },
        },
      }),
    },
    { data: event("ping", {}) },
  ];
  let index = 0;
  if (chunks.length > 0) {
    out.push({ data: event("content_block_start", { index, content_block: { type: "text", text: "" } }) });
    for (const text of chunks) {
      out.push({ data: event("content_block_delta", { index, delta: { type: "text_delta", text } }), text: true });
    }
    out.push({ data: event("content_block_stop", { index }) });
    index++;
  }
  for (const call of calls) {
    const args = JSON.stringify(call.args);
    const half = Math.ceil(args.length / 2);
    out.push({
      data: event("content_block_start", {
        index,
        content_block: { type: "tool_use", id: call.id, name: call.name, input: {} },
      }),
      text: true,
    });
    for (const partial_json of [args.slice(0, half), args.slice(half)]) {
      out.push({ data: event("content_block_delta", { index, delta: { type: "input_json_delta", partial_json } }) });
    }
    out.push({ data: event("content_block_stop", { index }) });
    index++;
  }
  out.push({
    data: event("message_delta", {
      delta: { stop_reason: calls.length > 0 ? "tool_use" : "end_turn", stop_sequence: null },
      usage: { output_tokens: usage.output },
    }),
    finish: true,
  });
  out.push({ data: event("message_stop", {}) });
  return out;
}

function anthropicJson(
  id: number,
  model: string,
  text: string,
  calls: Required<ScriptedToolCall>[],
  usage: { input: number; output: number },
): object {
  return {
    id: `msg_${id}`,
    type: "message",
    role: "assistant",
    model,
    content: [
      ...(text ? [{ type: "text", text }] : []),
      ...calls.map((c) => ({ type: "tool_use", id: c.id, name: c.name, input: c.args })),
    ],
    stop_reason: calls.length > 0 ? "tool_use" : "end_turn",
    stop_sequence: null,
    usage: { input_tokens: usage.input, output_tokens: usage.output },
  };
}

/** The text of the last user message of a request body of either format. */
function promptOf(format: "openai" | "anthropic", body: any): string {
  const messages: any[] = Array.isArray(body.messages) ? body.messages : [];
  const last = messages.filter((m) => m?.role === "user").at(-1);
  if (!last) return "";
  if (typeof last.content === "string") return last.content;
  if (!Array.isArray(last.content)) return "";
  const parts = last.content.filter((p: any) => p?.type === "text").map((p: any) => String(p.text));
  return format === "openai" ? parts.join("") : parts.join("\n");
}

function anthropicErrorType(status: number): string {
  if (status === 529) return "overloaded_error";
  if (status === 429) return "rate_limit_error";
  if (status === 401) return "authentication_error";
  if (status === 403) return "permission_error";
  if (status === 404) return "not_found_error";
  if (status === 413) return "request_too_large";
  if (status >= 500) return "api_error";
  return "invalid_request_error";
}

function defaultMessage(status: number): string {
  if (status === 429) return "Rate limit reached for requests";
  if (status === 529) return "Overloaded";
  if (status === 503) return "The server is overloaded or not ready yet.";
  if (status >= 500) return "The server had an error while processing your request.";
  if (status === 401) return "Incorrect API key provided.";
  return "Invalid request";
}

function words(text: string): number {
  return text.split(/\s+/).filter(Boolean).length;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let data = "";
    req.setEncoding("utf8");
    req.on("data", (chunk: string) => {
      data += chunk;
    });
    req.on("end", () => resolve(data));
    req.on("error", reject);
  });
}
