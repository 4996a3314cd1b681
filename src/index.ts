/**
 * Cairn: durable execution for AI agents. The public surface, every export by name.
 * Storage backends beyond memory are subpath exports (`cairn/sqlite`); the conformance suite
 * for custom backends is in `cairn/testing`.
 */
export type {
  AgentDefinition,
  ToolDefinition,
  ToolMap,
  ToolOptions,
  WorkflowFunction,
  WorkflowInput,
  WorkflowOutput,
} from "./agent/agent.ts";
export {
  type AgentDecoratorOptions,
  type AgentLike,
  agent,
  isAgentLike,
  type ToolDecoratorOptions,
  toAgentDefinition,
  tool,
  workflow,
} from "./agent/decorators.ts";
export { defineAgent, defineTool } from "./agent/define.ts";
export type {
  ClaimRequest,
  CreateRunInput,
  Fence,
  RenewRequest,
  RunFilter,
  RunPatch,
  RuntimeBackend,
  TransitionRequest,
} from "./backend/backend.ts";
export { InMemoryBackend } from "./backend/memory/memory-backend.ts";
export { type CairnConfig, defineConfig } from "./cli/config.ts";
export type {
  BaseContext,
  ChatMessage,
  GenerateRequest,
  LlmClient,
  ModelResponse,
  ToolCallOptions,
  ToolContext,
  WorkflowContext,
} from "./core/context.ts";
export {
  CairnError,
  type CairnErrorCode,
  HeartbeatTimeoutError,
  IllegalTransitionError,
  InvalidDefinitionError,
  InvalidInputError,
  LeaseLostError,
  NonRetryableError,
  NotSerializableError,
  ReplayDivergenceError,
  RunEndedError,
  RunNotFoundError,
  RunNotResumableError,
  RuntimeClosedError,
  type SerializedError,
  StepTimeoutError,
  StorageError,
  ToolFailedError,
  UnknownNameError,
  WaitTimeoutError,
} from "./core/errors.ts";
export type {
  Actor,
  AttemptRecord,
  Json,
  RunRecord,
  StepKind,
  StepRecord,
  TransitionRecord,
  Usage,
  Versions,
} from "./core/records.ts";
export { DEFAULT_RETRY_POLICY, type RetryPolicy } from "./core/retry-policy.ts";
export {
  isTerminal,
  PAUSED_REASONS,
  type PausedReason,
  RUN_STATES,
  type RunState,
  TERMINAL_STATES,
} from "./core/run-state.ts";
export { assertTransition, canTransition, TRANSITIONS } from "./core/transitions.ts";
export type { DomainCallInfo, DomainProvider } from "./domain/domain-provider.ts";
export type { ModelProvider } from "./llm/model-provider.ts";
export { ScriptedModel, type ScriptedModelOptions, type ScriptedReply } from "./llm/scripted-model.ts";
export { consoleLogger, type Logger, silentLogger } from "./runtime/logger.ts";
export { RunHandle } from "./runtime/run-handle.ts";
export { type RunHistory, Runtime, type RuntimeOptions, type StartOptions } from "./runtime/runtime.ts";
export { RUNTIME_VERSION } from "./runtime/version.ts";
export type { WorkerOptions } from "./worker/worker.ts";
