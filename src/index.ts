/**
 * Cairn: durable execution for AI agents. The public surface, every export by name.
 * Storage backends beyond memory are subpath exports (`cairn/sqlite`, `cairn/postgres`); models
 * over the AI SDK are in `cairn/ai-sdk`; the test runtime is in `cairn/testing`. The subpaths that
 * need an optional peer dependency (`pg`, the AI SDK packages) fail with a message naming it.
 * @module cairn
 */

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
  ClaimedRun,
  ClaimManyRequest,
  ClaimRequest,
  ClaimStart,
  CreateRunInput,
  Fence,
  PruneRunsRequest,
  PruneRunsResult,
  RenewRequest,
  ResolveWaitRequest,
  ResolveWaitResult,
  RunFilter,
  RunPatch,
  RuntimeBackend,
  SignalRequest,
  SignalResult,
  StopRunRequest,
  SuspendRequest,
  SuspendResult,
  TransitionFeedEntry,
  TransitionFeedPage,
  TransitionFeedRequest,
  TransitionRequest,
  Wake,
} from "./backend/backend.ts";
export { InMemoryBackend } from "./backend/memory/memory-backend.ts";
export { type CairnConfig, defineConfig } from "./cli/config.ts";
export type {
  AgentDefinition,
  CompensateMode,
  EffectStatusAnswer,
  EffectStatusContext,
  ToolApproval,
  ToolDefinition,
  ToolEffect,
  ToolMap,
  ToolOptions,
  WorkflowFunction,
  WorkflowInput,
  WorkflowOutput,
} from "./core/agent-definition.ts";
export type { AgentLoopOptions, AgentLoopResult } from "./core/agent-loop.ts";
export { approvalDigest } from "./core/approval-digest.ts";
export type { Budget } from "./core/budget.ts";
export { type Clock, systemClock } from "./core/clock.ts";
export type {
  ApprovalDecision,
  ApprovalRequest,
  AskOptions,
  BaseContext,
  ChildHandle,
  LlmClient,
  SpawnOptions,
  ToolCallOptions,
  ToolContext,
  WorkflowContext,
} from "./core/context.ts";
export { type ContractDigest, canonicalJson, digestContract, verifyContractDigest } from "./core/contract-digest.ts";
export type { DomainCallInfo, DomainProvider } from "./core/domain-provider.ts";
export {
  AgentLoopStuckError,
  AlreadyDecidedError,
  ApprovalDeniedError,
  ApprovalExpiredError,
  ApprovalRefusedError,
  BudgetExceededError,
  CairnError,
  type CairnErrorCode,
  CancelledError,
  CompensationFailedError,
  ContextOverflowError,
  ContractAlteredError,
  EffectNotAppliedError,
  EffectNotFoundError,
  EffectRefusedError,
  EffectUnresolvedError,
  HeartbeatTimeoutError,
  HistoryLimitError,
  IllegalTransitionError,
  ImportConflictError,
  InvalidDefinitionError,
  InvalidInputError,
  LeaseLostError,
  MaxTurnsExceededError,
  McpError,
  type ModelErrorDetails,
  ModelRequestError,
  ModelUnavailableError,
  NonRetryableError,
  NotSerializableError,
  PayloadTooLargeError,
  PolicyDeniedError,
  ReplayDivergenceError,
  RunEndedError,
  RunNotCompletedError,
  RunNotFoundError,
  RunNotOpenError,
  RunNotResumableError,
  RuntimeClosedError,
  SandboxLostError,
  SandboxUnavailableError,
  ScheduleNotFoundError,
  type SerializedError,
  SignalInboxFullError,
  StepLimitError,
  StepTimeoutError,
  StorageError,
  StorageRejectedError,
  ToolFailedError,
  UnknownNameError,
  VersionMismatchError,
  WaitClosedError,
  WaitNotFoundError,
  WaitTimeoutError,
} from "./core/errors.ts";
export type { RunEvent, RunEventBody, RunEventsOptions } from "./core/events.ts";
export {
  type LegacyLogger,
  LOG_LEVELS,
  type LogFields,
  type LogFn,
  type Logger,
  type LogLevel,
  silentLogger,
} from "./core/logger.ts";
export type { McpCallResult, McpServerConfig, McpToolInfo, McpTools } from "./core/mcp-tools.ts";
export type {
  ChatMessage,
  GenerateRequest,
  ModelResponse,
  ModelTool,
  ModelToolCall,
} from "./core/model-messages.ts";
export type { ModelCallOptions, ModelProvider } from "./core/model-provider.ts";
export type { Policy, PolicyCall, PolicyDecision } from "./core/policies.ts";
export { DEFAULT_PRICES, type ModelPrice } from "./core/prices.ts";
export type { RateLimitDeclaration, RateLimitSpec } from "./core/rate-limits.ts";
export type {
  AcceptanceRecord,
  Actor,
  AttemptRecord,
  EffectRecord,
  EffectStatus,
  Json,
  ParentClosePolicy,
  RunRecord,
  RunUsage,
  SandboxRestore,
  SignalRecord,
  StepKind,
  StepRecord,
  StopRequest,
  TransitionRecord,
  Usage,
  Versions,
  WaitKind,
  WaitOutcome,
  WaitRecord,
  WaitResolution,
} from "./core/records.ts";
export { REDACTED } from "./core/redact.ts";
export {
  DEFAULT_PRUNE_BATCH_SIZE,
  DEFAULT_PRUNE_STATES,
  parseDuration,
  type RetentionPolicy,
} from "./core/retention.ts";
export { DEFAULT_RETRY_POLICY, type RetryPolicy } from "./core/retry-policy.ts";
export {
  type ContractState,
  contractState,
  type JobSpec,
  RUN_CONTRACT_VERSION,
  type RunContract,
} from "./core/run-contract.ts";
export {
  isTerminal,
  PAUSED_REASONS,
  type PausedReason,
  RUN_STATES,
  type RunState,
  TERMINAL_STATES,
} from "./core/run-state.ts";
export type {
  ExecResult,
  Sandbox,
  SandboxInfo,
  SandboxLimits,
  SandboxMount,
  SandboxProvider,
  SandboxSnapshot,
  SandboxSpec,
  SandboxStatus,
} from "./core/sandbox.ts";
export type {
  RuntimeSandboxOptions,
  SandboxExecOptions,
  SandboxExecResult,
  SandboxHandle,
} from "./core/sandbox-handle.ts";
export {
  defineSchedule,
  type ScheduleCatchUp,
  type ScheduleDefinition,
  type ScheduleOptions,
  type ScheduleOverlap,
  type ScheduleRecord,
} from "./core/schedules.ts";
export { ReplayedError } from "./core/serialize.ts";
export type { StoredTraceContext } from "./core/telemetry/trace-context.ts";
export { assertTransition, canTransition, RESUMABLE_FAILURES, TRANSITIONS } from "./core/transitions.ts";
export { describeWait } from "./core/wait-description.ts";
export {
  ScriptedModel,
  type ScriptedModelOptions,
  type ScriptedReply,
  type ScriptedTurn,
} from "./llm/scripted-model.ts";
export { McpClients } from "./mcp/mcp-clients.ts";
export { type ConsoleLoggerOptions, consoleLogger, createConsoleLogger } from "./runtime/console-logger.ts";
export type { VerdictOptions } from "./runtime/contract-operations.ts";
export { type CostFigures, type CostFilter, type CostReport, costFormula } from "./runtime/cost-report.ts";
export type { ReconcileOptions } from "./runtime/effect-operations.ts";
export type { ImportResult, MoveOptions } from "./runtime/import-operations.ts";
export { PROMETHEUS_CONTENT_TYPE, prometheusMetrics } from "./runtime/metrics-text.ts";
export type { PruneOptions, PruneResult } from "./runtime/prune-operations.ts";
export { type RateLimit, SharedRateLimiter, type SharedRateLimiterOptions } from "./runtime/rate-limiter.ts";
export { buildRunContract, type RunContractInput } from "./runtime/run-contract-builder.ts";
export { RunHandle } from "./runtime/run-handle.ts";
export { type RunHistory, Runtime, type RuntimeOptions, type StartOptions } from "./runtime/runtime.ts";
export type { RuntimeSchedules, ScheduleView } from "./runtime/runtime-schedules.ts";
export { environmentSecrets, type SecretProvider } from "./runtime/secrets.ts";
export { RUNTIME_VERSION } from "./runtime/version.ts";
export type { DecisionOptions, SignalOptions } from "./runtime/wait-operations.ts";
export { DEFAULT_WORKER_CONCURRENCY, type WorkerOptions } from "./worker/worker-options.ts";
