import type { EffectEntry } from "../api/responses.ts";
import { readSse } from "../api/sse-reader.ts";
import type { CompensateMode } from "../core/agent-definition.ts";
import type { Budget } from "../core/budget.ts";
import { RunEndedError } from "../core/errors.ts";
import type { Json, RunRecord, StepRecord, TransitionRecord, WaitRecord } from "../core/records.ts";
import type { JobSpec, RunContract } from "../core/run-contract.ts";
import { DEFAULT_MAX_AUTO_RECOVERIES, hasOutcome } from "../core/run-state.ts";
import { traceHeaders } from "../core/telemetry/trace-context.ts";
import type { RemoteAgentName, RemoteInput, RemoteOutput, RemoteWorkflowName } from "./agent-types.ts";
import { CairnHttpError } from "./http-error.ts";
import type {
  RemoteAgent,
  RemoteEvent,
  RemoteEventsOptions,
  RemotePrincipal,
  RemoteRunFilter,
  RemoteRunHandle,
  RemoteRunHistory,
  RemoteRunPage,
} from "./remote-types.ts";

/**
 * `CairnClient`: the runtime's client operations over the HTTP API of `cairn/server`, with the
 * runtime's method names. Who acts is the token's subject: no method takes `by`. Errors the
 * server answers with are thrown as {@link CairnHttpError} (`code`, `status`, `message`).
 */

/** Options of {@link CairnClient}. */
export interface CairnClientOptions {
  /** The server, e.g. `http://127.0.0.1:4000`. */
  baseUrl: string;
  /** The bearer token; none for a server without tokens. @default none */
  token?: string;
  /** The fetch to use. @default globalThis.fetch */
  fetch?: typeof fetch;
}

/** Options of {@link CairnClient.run}: what `POST /api/runs` takes besides the agent, workflow and input. */
export interface RemoteStartOptions {
  /** Idempotency key: starting again with the same (agent, workflow, key) returns that run. */
  key?: string;
  /** Caps of this run: may lower the agent's or add caps it lacks; raising one needs admin. */
  budget?: Budget;
  /** When the run undoes its applied effects; a mode other than the agent's needs admin. */
  compensate?: CompensateMode;
  /** Data kept with the run; the keys module, compensate, budget and job are refused (use the options). */
  meta?: Record<string, Json>;
  job?: JobSpec;
}

/**
 * A typed client of the HTTP API. Given the agents' types (`CairnClient<typeof agents>`, the list
 * the server's runtime is made with, imported with `import type`), `run` checks the agent and
 * workflow names and the input, and `result()` resolves to the workflow's output type, as
 * in-process runs do; without them every name and input is accepted and results are `unknown`.
 *
 * @example
 * // import type { agents } from "./agents.ts";   // const agents = [reportBuilder, expenses]
 * const client = new CairnClient<typeof agents>({ baseUrl: "http://127.0.0.1:4000", token: process.env.CAIRN_TOKEN });
 * const run = await client.run("report_builder", "build", { quarter: "2026-Q3" }, { key: "report-2026-Q3" });
 * for await (const event of client.events(run.id)) console.log(event.type, event.data);
 * console.log(await run.result());
 */
export class CairnClient<Agents = unknown> {
  readonly #base: string;
  readonly #token: string | undefined;
  readonly #fetch: typeof fetch;

  constructor(options: CairnClientOptions) {
    this.#base = options.baseUrl.replace(/\/+$/, "");
    this.#token = options.token;
    // Called as a plain function: a browser's fetch called as a method of another object throws
    // "Illegal invocation".
    const given = options.fetch ?? globalThis.fetch;
    this.#fetch = (input, init) => given(input, init);
  }

  /** Who the token is, and whether the server authenticates at all. */
  me(): Promise<RemotePrincipal> {
    return this.#request("GET", "/api/me");
  }

  /** The agents the server knows. */
  async agents(): Promise<RemoteAgent[]> {
    return (await this.#request<{ agents: RemoteAgent[] }>("GET", "/api/agents")).agents;
  }

  /**
   * Starts a run of `workflow` of `agent` (or returns the run of `key`). Typed with the agents
   * (`CairnClient<typeof agents>`), the names and the input are checked and `result()` gives the
   * workflow's output type.
   */
  async run<N extends RemoteAgentName<Agents>, K extends RemoteWorkflowName<Agents, N>>(
    agent: N,
    workflow: K,
    input: RemoteInput<Agents, N, K>,
    options: RemoteStartOptions = {},
  ): Promise<RemoteRunHandle<RemoteOutput<Agents, N, K>>> {
    const { run, created } = await this.#request<{ run: RunRecord; created: boolean }>("POST", "/api/runs", {
      agent,
      workflow,
      input: input === undefined ? null : input,
      ...options,
    });
    return {
      id: run.id,
      created,
      run,
      result: async (wait = {}) => {
        const ended = await this.waitFor(run.id, wait);
        if (ended.state === "COMPLETED") return ended.output as RemoteOutput<Agents, N, K>;
        throw new RunEndedError({ runId: ended.id, state: ended.state as never, error: ended.error });
      },
    };
  }

  /** The run as stored (`RUN_NOT_FOUND` for an unknown id). */
  async getRun(runId: string): Promise<RunRecord> {
    return (await this.#request<{ run: RunRecord }>("GET", `/api/runs/${enc(runId)}`)).run;
  }

  /** One page of runs, newest first. */
  listRuns(filter: RemoteRunFilter = {}): Promise<RemoteRunPage> {
    const query = new URLSearchParams();
    for (const [key, value] of Object.entries(filter)) {
      if (value === undefined) continue;
      query.set(key, Array.isArray(value) ? value.join(",") : String(value));
    }
    const text = query.toString();
    return this.#request("GET", `/api/runs${text ? `?${text}` : ""}`);
  }

  /** The run with its transitions, steps and waits. */
  async history(runId: string): Promise<RemoteRunHistory> {
    const run = await this.getRun(runId);
    const [transitions, steps, waits] = await Promise.all([
      this.transitions(runId),
      this.steps(runId),
      this.waits(runId),
    ]);
    return { run, transitions, steps, waits };
  }

  /** The run's transition log. */
  async transitions(runId: string): Promise<TransitionRecord[]> {
    return (await this.#request<{ transitions: TransitionRecord[] }>("GET", `/api/runs/${enc(runId)}/transitions`))
      .transitions;
  }

  /** The run's steps, in seq order. */
  async steps(runId: string): Promise<StepRecord[]> {
    return (await this.#request<{ steps: StepRecord[] }>("GET", `/api/runs/${enc(runId)}/steps`)).steps;
  }

  /** The run's effects (steps that carry an effect record). */
  async effects(runId: string): Promise<EffectEntry[]> {
    return (await this.#request<{ effects: EffectEntry[] }>("GET", `/api/runs/${enc(runId)}/effects`)).effects;
  }

  /** The run's waits; approvals are waits of kind `approval`. */
  async waits(runId: string): Promise<WaitRecord[]> {
    return (await this.#request<{ waits: WaitRecord[] }>("GET", `/api/runs/${enc(runId)}/waits`)).waits;
  }

  /** Sends signal `name` to the run (de-duplicated by `messageId`). */
  signal(
    runId: string,
    name: string,
    payload?: unknown,
    options: { messageId?: string } = {},
  ): Promise<{ duplicate: boolean; deliveredTo: string | null; messageId: string }> {
    return this.#request("POST", `/api/runs/${enc(runId)}/signal`, {
      name,
      ...(payload !== undefined && { payload }),
      ...options,
    });
  }

  /** Answers the question `waitId`; an answer that does not match its schema is `INVALID_INPUT`. */
  async answer(runId: string, waitId: string, value: unknown): Promise<WaitRecord> {
    return (
      await this.#request<{ wait: WaitRecord }>("POST", `/api/runs/${enc(runId)}/waits/${enc(waitId)}/answer`, {
        value: value === undefined ? null : value,
      })
    ).wait;
  }

  /** Approves `approvalId` as the token's subject, on the payload whose digest is `digest`. */
  approve(runId: string, approvalId: string, options: { digest: string; note?: string }): Promise<WaitRecord> {
    return this.#decide(runId, approvalId, "approve", options);
  }

  /** Denies `approvalId` as the token's subject. */
  deny(runId: string, approvalId: string, options: { digest: string; note?: string }): Promise<WaitRecord> {
    return this.#decide(runId, approvalId, "deny", options);
  }

  async #decide(
    runId: string,
    approvalId: string,
    verb: "approve" | "deny",
    options: { digest: string; note?: string },
  ): Promise<WaitRecord> {
    const path = `/api/runs/${enc(runId)}/approvals/${enc(approvalId)}/${verb}`;
    return (await this.#request<{ wait: WaitRecord }>("POST", path, options)).wait;
  }

  /** Cancels the run; returns it as the request left it. */
  async cancel(runId: string, options: { reason?: string } = {}): Promise<RunRecord> {
    return (await this.#request<{ run: RunRecord }>("POST", `/api/runs/${enc(runId)}/cancel`, options)).run;
  }

  /** Resumes an interrupted run (or a replay divergence, or a suspended orphan). */
  async resume(runId: string): Promise<RunRecord> {
    return (await this.#request<{ run: RunRecord }>("POST", `/api/runs/${enc(runId)}/resume`, {})).run;
  }

  /**
   * A new run from this run's journal up to `fromStep` (exclusive), on the server's code
   * (`Runtime.fork`); returns it, its lineage in `forkedFrom`.
   */
  async fork(runId: string, options: { fromStep: number; input?: unknown }): Promise<RunRecord> {
    return (await this.#request<{ run: RunRecord }>("POST", `/api/runs/${enc(runId)}/fork`, options)).run;
  }

  /** A FAILED run run again from its failed step, on the server's code (`Runtime.rerun`): the new run. */
  async rerun(runId: string): Promise<RunRecord> {
    return (await this.#request<{ run: RunRecord }>("POST", `/api/runs/${enc(runId)}/rerun`, {})).run;
  }

  /** Settles an effect of unknown outcome. */
  async reconcile(
    runId: string,
    effectId: string,
    options: { outcome: "applied" | "not_applied"; result?: unknown; receipt?: unknown; note?: string },
  ): Promise<RunRecord> {
    const path = `/api/runs/${enc(runId)}/effects/${enc(effectId)}/reconcile`;
    return (await this.#request<{ run: RunRecord }>("POST", path, options)).run;
  }

  /** Accepts a completed run's outcome. */
  async accept(runId: string, options: { note?: string } = {}): Promise<RunRecord> {
    return (await this.#request<{ run: RunRecord }>("POST", `/api/runs/${enc(runId)}/accept`, options)).run;
  }

  /** Rejects a completed run's outcome. */
  async reject(runId: string, options: { note?: string } = {}): Promise<RunRecord> {
    return (await this.#request<{ run: RunRecord }>("POST", `/api/runs/${enc(runId)}/reject`, options)).run;
  }

  /** The run contract. */
  exportRun(runId: string): Promise<RunContract> {
    return this.#request("GET", `/api/runs/${enc(runId)}/contract`);
  }

  /** Recreates a run from its contract on the server's store (admin); the same contract again is a no-op. */
  importRun(contract: RunContract): Promise<{ run: RunRecord; created: boolean }> {
    return this.#request("POST", "/api/runs/import", contract);
  }

  /** Exports a run and ends it MOVED on the server's store (admin): keep the contract, import it elsewhere. */
  async moveRun(runId: string, options: { to?: string } = {}): Promise<RunContract> {
    return (await this.#request<{ contract: RunContract }>("POST", `/api/runs/${enc(runId)}/move`, options)).contract;
  }

  /**
   * Waits until the run settles (a terminal state or NEEDS_RECONCILIATION) and returns it, looking
   * every `pollIntervalMs` (default 250). As `runtime.waitFor`, it waits through automatic
   * recovery: an INTERRUPTED run recovered fewer than `maxAutoRecoveries` times (the workers'
   * bound, default 3) is waited on; once the bound is used up it is returned.
   */
  async waitFor(
    runId: string,
    options: { timeoutMs?: number; pollIntervalMs?: number; maxAutoRecoveries?: number } = {},
  ): Promise<RunRecord> {
    const deadline = options.timeoutMs === undefined ? Number.POSITIVE_INFINITY : Date.now() + options.timeoutMs;
    const bound = options.maxAutoRecoveries ?? DEFAULT_MAX_AUTO_RECOVERIES;
    for (;;) {
      const run = await this.getRun(runId);
      if (hasOutcome(run, bound)) return run;
      if (Date.now() >= deadline) {
        throw new CairnHttpError(`run ${runId} is still ${run.state} after ${options.timeoutMs} ms`, {
          code: "WAIT_TIMEOUT",
          status: 0,
        });
      }
      await new Promise((r) => setTimeout(r, Math.min(options.pollIntervalMs ?? 250, deadline - Date.now())));
    }
  }

  /**
   * The run's live events — transitions, steps, model output — until it settles (`end`, the last
   * event). `from` is an event id (not an offset, as `runtime.events` takes): the stream resumes
   * after it. A dropped connection is resumed from the last id.
   */
  events(runId: string, options: RemoteEventsOptions = {}): AsyncIterable<RemoteEvent> {
    return this.#stream(`/api/runs/${enc(runId)}/events`, options);
  }

  /** Every run's transitions, live: `ready` first, then `transition` events, until `signal` fires. */
  allEvents(options: RemoteEventsOptions = {}): AsyncIterable<RemoteEvent> {
    return this.#stream("/api/events", options);
  }

  async *#stream(path: string, options: RemoteEventsOptions): AsyncGenerator<RemoteEvent> {
    let lastId = options.from;
    let failures = 0;
    const reconnects = options.reconnects ?? 5;
    while (!options.signal?.aborted) {
      let response: Response;
      try {
        response = await this.#fetch(this.#base + path, {
          headers: {
            Accept: "text/event-stream",
            ...this.#auth(),
            ...(lastId !== undefined && { "Last-Event-ID": lastId }),
          },
          ...(options.signal && { signal: options.signal }),
        });
      } catch (error) {
        if (options.signal?.aborted) return;
        if (++failures > reconnects) throw error;
        await pause(failures);
        continue;
      }
      if (!response.ok) throw CairnHttpError.fromResponse(response.status, await response.text());
      if (!response.body) throw new CairnHttpError("the event stream has no body", { code: "HTTP_STREAM", status: 0 });
      try {
        for await (const raw of readSse(response.body)) {
          failures = 0;
          if (raw.id !== undefined) lastId = raw.id;
          const event = { id: raw.id ?? "", type: raw.event, data: JSON.parse(raw.data) } as RemoteEvent;
          yield event;
          if (event.type === "end") return;
        }
      } catch (error) {
        if (options.signal?.aborted) return;
        if (++failures > reconnects) throw error;
      }
      if (options.signal?.aborted) return;
      await pause(failures);
    }
  }

  #auth(): Record<string, string> {
    return this.#token === undefined ? {} : { Authorization: `Bearer ${this.#token}` };
  }

  async #request<T>(method: "GET" | "POST", path: string, body?: unknown): Promise<T> {
    const response = await this.#fetch(this.#base + path, {
      method,
      headers: {
        Accept: "application/json",
        ...this.#auth(),
        // The caller's trace (its active span) goes on on the server: a run started here joins it.
        ...traceHeaders(),
        ...(body !== undefined && { "Content-Type": "application/json" }),
      },
      ...(body !== undefined && { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    if (!response.ok) throw CairnHttpError.fromResponse(response.status, text);
    return (text === "" ? undefined : JSON.parse(text)) as T;
  }
}

function enc(segment: string): string {
  return encodeURIComponent(segment);
}

function pause(failures: number): Promise<void> {
  return new Promise((r) => setTimeout(r, Math.min(250 * 2 ** Math.max(0, failures - 1), 5000)));
}
