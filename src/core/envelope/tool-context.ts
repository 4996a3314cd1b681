import type { LlmClient, ToolContext } from "../context.ts";
import type { GenerateRequest, ModelResponse } from "../model-messages.ts";
import { costOf } from "../prices.ts";
import type { Json, RunRecord } from "../records.ts";
import type { EnvelopeHost } from "./envelope-host.ts";
import type { StepExecution } from "./step-attempt.ts";

/**
 * The `ctx` of one tool attempt. A class, so the hot path of a step allocates one object and
 * no closures. Model calls and domain reads made here are part of the tool's step: not
 * checkpointed on their own, but their usage is counted on it.
 */
export class ToolAttemptContext implements ToolContext {
  readonly runId: string;
  readonly agent: string;
  readonly workflow: string;
  readonly tool: string;
  readonly #attempt: StepExecution;
  readonly #host: EnvelopeHost;
  #llm: LlmClient | undefined;

  constructor(run: RunRecord, tool: string, attempt: StepExecution, host: EnvelopeHost) {
    this.runId = run.id;
    this.agent = run.agent;
    this.workflow = run.workflow;
    this.tool = tool;
    this.#attempt = attempt;
    this.#host = host;
  }

  get seq(): number {
    return this.#attempt.seq;
  }

  get stepId(): string {
    return `${this.runId}:${this.#attempt.seq}`;
  }

  get idempotencyKey(): string {
    return this.#attempt.idempotencyKey ?? `${this.runId}:${this.#attempt.seq}`;
  }

  get attempt(): number {
    return this.#attempt.attempt;
  }

  get signal(): AbortSignal {
    return this.#attempt.signal;
  }

  get lastHeartbeat(): Json | undefined {
    return this.#attempt.lastHeartbeat();
  }

  heartbeat(details?: Json): void {
    this.#attempt.heartbeat(details);
  }

  async domain<R = unknown>(domain: string, entity: string, params: Record<string, unknown> = {}): Promise<R> {
    return (await this.#host.readDomain(domain, entity, params, { runId: this.runId, signal: this.signal })) as R;
  }

  get llm(): LlmClient {
    this.#llm ??= {
      generate: async (request) => (await this.#callModel(request)).text,
      chat: (request) => this.#callModel(request),
    };
    return this.#llm;
  }

  secret(name: string): Promise<string> {
    return this.#host.secret(name);
  }

  log(message: string, fields?: Record<string, unknown>): void {
    this.#host.log("info", message, { runId: this.runId, seq: this.#attempt.seq, tool: this.tool, ...fields });
  }

  async #callModel(request: GenerateRequest): Promise<ModelResponse> {
    const response = await this.#host.model(request.model).generate(request, { signal: this.signal });
    this.#attempt.addUsage({ ...response.usage, costUsd: costOf(this.#host.prices, response.model, response.usage) });
    return response;
  }
}
