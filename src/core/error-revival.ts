import {
  AgentLoopStuckError,
  AlreadyDecidedError,
  ApprovalDeniedError,
  ApprovalExpiredError,
  ApprovalRefusedError,
  BudgetExceededError,
  type CairnError,
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
  MissingPeerDependencyError,
  ModelRequestError,
  ModelUnavailableError,
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
} from "./errors.ts";

/**
 * The class of every code, so an error read back from the journal is an instance of the class it
 * was thrown as (like Temporal's failure converter, which turns a stored failure back into its
 * class). Typed over the whole union: a new code does not compile until it is listed here.
 */
const CLASS_OF: { readonly [C in CairnErrorCode]: abstract new (...args: never[]) => CairnError } = {
  ILLEGAL_TRANSITION: IllegalTransitionError,
  REPLAY_DIVERGENCE: ReplayDivergenceError,
  INVALID_INPUT: InvalidInputError,
  UNKNOWN_AGENT: UnknownNameError,
  UNKNOWN_WORKFLOW: UnknownNameError,
  UNKNOWN_TOOL: UnknownNameError,
  UNKNOWN_DOMAIN: UnknownNameError,
  UNKNOWN_MODEL: UnknownNameError,
  UNKNOWN_MCP_SERVER: UnknownNameError,
  UNKNOWN_SECRET: UnknownNameError,
  INVALID_DEFINITION: InvalidDefinitionError,
  TOOL_FAILED: ToolFailedError,
  STEP_TIMEOUT: StepTimeoutError,
  HEARTBEAT_TIMEOUT: HeartbeatTimeoutError,
  LEASE_LOST: LeaseLostError,
  RUN_NOT_FOUND: RunNotFoundError,
  SCHEDULE_NOT_FOUND: ScheduleNotFoundError,
  RUN_NOT_RESUMABLE: RunNotResumableError,
  RUN_FAILED: RunEndedError,
  RUN_BLOCKED: RunEndedError,
  RUN_INTERRUPTED: RunEndedError,
  RUN_CANCELLED: RunEndedError,
  RUN_COMPENSATED: RunEndedError,
  RUN_NEEDS_RECONCILIATION: RunEndedError,
  RUN_MOVED: RunEndedError,
  CONTRACT_ALTERED: ContractAlteredError,
  IMPORT_CONFLICT: ImportConflictError,
  WAIT_TIMEOUT: WaitTimeoutError,
  NOT_SERIALIZABLE: NotSerializableError,
  RUNTIME_CLOSED: RuntimeClosedError,
  STORAGE: StorageError,
  STORAGE_REJECTED: StorageRejectedError,
  WAIT_NOT_FOUND: WaitNotFoundError,
  WAIT_CLOSED: WaitClosedError,
  RUN_NOT_OPEN: RunNotOpenError,
  APPROVAL_DENIED: ApprovalDeniedError,
  APPROVAL_EXPIRED: ApprovalExpiredError,
  APPROVAL_REFUSED: ApprovalRefusedError,
  CANCELLED: CancelledError,
  VERSION_MISMATCH: VersionMismatchError,
  STEP_LIMIT: StepLimitError,
  HISTORY_LIMIT: HistoryLimitError,
  SIGNAL_INBOX_FULL: SignalInboxFullError,
  PAYLOAD_TOO_LARGE: PayloadTooLargeError,
  EFFECT_NOT_APPLIED: EffectNotAppliedError,
  EFFECT_REFUSED: EffectRefusedError,
  EFFECT_UNRESOLVED: EffectUnresolvedError,
  EFFECT_NOT_FOUND: EffectNotFoundError,
  COMPENSATION_FAILED: CompensationFailedError,
  POLICY_DENIED: PolicyDeniedError,
  BUDGET_EXCEEDED: BudgetExceededError,
  RUN_NOT_COMPLETED: RunNotCompletedError,
  ALREADY_DECIDED: AlreadyDecidedError,
  MODEL_UNAVAILABLE: ModelUnavailableError,
  MODEL_REQUEST_REJECTED: ModelRequestError,
  CONTEXT_OVERFLOW: ContextOverflowError,
  MAX_TURNS_EXCEEDED: MaxTurnsExceededError,
  AGENT_LOOP_STUCK: AgentLoopStuckError,
  MCP_FAILED: McpError,
  SANDBOX_LOST: SandboxLostError,
  SANDBOX_UNAVAILABLE: SandboxUnavailableError,
  MISSING_PEER_DEPENDENCY: MissingPeerDependencyError,
};

/**
 * The {@link CairnError} a journal entry describes, rebuilt into its class with its data (`tool`,
 * `attempts`, `provider`, `status`, `budget` …), its message, stack and cause; or undefined when
 * the entry is not a Cairn error's (only a Cairn error's entry carries `retryable` with a known
 * code: a user error that has a `code` of its own is not taken for one).
 *
 * The instance is made by `Error`'s own constructor with the class as its prototype (so it is a
 * real error object, `instanceof` its class and every base), without running the class's
 * constructor, whose parameters differ from class to class; its fields are then set from the entry.
 */
export function reviveCairnError(serialized: SerializedError, cause: Error | undefined): CairnError | undefined {
  if (serialized.retryable === undefined || serialized.code === undefined) return undefined;
  if (!Object.hasOwn(CLASS_OF, serialized.code)) return undefined;
  const Class = CLASS_OF[serialized.code as CairnErrorCode];
  const error = Reflect.construct(
    Error,
    cause === undefined ? [serialized.message] : [serialized.message, { cause }],
    Class,
  ) as CairnError;
  // The order a live instance has: `name` (the base constructor), `code` (the class), its fields.
  const fields: Record<string, unknown> = { name: serialized.name, code: serialized.code };
  for (const [key, value] of Object.entries(serialized.data ?? {})) {
    if (key !== "code" && key !== "message" && key !== "stack" && key !== "cause") fields[key] = value;
  }
  for (const [key, value] of Object.entries(fields)) {
    Object.defineProperty(error, key, { value, writable: true, enumerable: true, configurable: true });
  }
  if (serialized.stack !== undefined) {
    Object.defineProperty(error, "stack", {
      value: serialized.stack,
      writable: true,
      enumerable: false,
      configurable: true,
    });
  }
  return error;
}
