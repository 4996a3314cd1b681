/**
 * Errors are data: every error Cairn raises is a {@link CairnError} with a stable `code` from a
 * closed union, a `name` per subclass, and a `retryable` flag that belongs to the class (never
 * found by matching a message).
 *
 * The classes live by family in `errors/`; import them from here.
 */

export {
  CairnError,
  type CairnErrorCode,
  type CairnErrorOptions,
  type SerializedError,
} from "./errors/cairn-error.ts";
export {
  CompensationFailedError,
  EffectNotAppliedError,
  EffectNotFoundError,
  EffectRefusedError,
  EffectUnresolvedError,
} from "./errors/effect-errors.ts";
export {
  IllegalTransitionError,
  InvalidDefinitionError,
  InvalidInputError,
  MissingPeerDependencyError,
  NotSerializableError,
  ReplayDivergenceError,
  RuntimeClosedError,
  StorageError,
  StorageRejectedError,
  UnknownNameError,
} from "./errors/general-errors.ts";
export { BudgetExceededError, PolicyDeniedError } from "./errors/governance-errors.ts";
export {
  HistoryLimitError,
  PayloadTooLargeError,
  SignalInboxFullError,
  StepLimitError,
} from "./errors/limit-errors.ts";
export {
  AgentLoopStuckError,
  ContextOverflowError,
  MaxTurnsExceededError,
  McpError,
  type ModelErrorDetails,
  ModelRequestError,
  ModelUnavailableError,
} from "./errors/model-errors.ts";
export {
  AlreadyDecidedError,
  CancelledError,
  ContractAlteredError,
  ImportConflictError,
  LeaseLostError,
  RunEndedError,
  RunNotCompletedError,
  RunNotFoundError,
  RunNotOpenError,
  RunNotResumableError,
  ScheduleNotFoundError,
  VersionMismatchError,
} from "./errors/run-errors.ts";
export { SandboxLostError, SandboxUnavailableError } from "./errors/sandbox-errors.ts";
export { HeartbeatTimeoutError, NonRetryableError, StepTimeoutError, ToolFailedError } from "./errors/step-errors.ts";
export {
  ApprovalDeniedError,
  ApprovalExpiredError,
  ApprovalRefusedError,
  WaitClosedError,
  WaitNotFoundError,
  WaitTimeoutError,
} from "./errors/wait-errors.ts";
