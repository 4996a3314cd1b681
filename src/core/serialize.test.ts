import { describe, expect, it } from "vitest";
import {
  BudgetExceededError,
  type CairnError,
  ContextOverflowError,
  EffectRefusedError,
  HistoryLimitError,
  InvalidInputError,
  ModelUnavailableError,
  NotSerializableError,
  PayloadTooLargeError,
  PolicyDeniedError,
  RunEndedError,
  type SerializedError,
  StepTimeoutError,
  ToolFailedError,
  UnknownNameError,
} from "./errors.ts";
import {
  DEFAULT_MAX_PAYLOAD_BYTES,
  deserializeError,
  jsonSnapshot,
  ReplayedError,
  serializeError,
  toJson,
} from "./serialize.ts";

describe("toJson with a size limit", () => {
  it("takes JSON text of exactly the limit and refuses one byte more, counting UTF-8 bytes", () => {
    const atLimit = "é".repeat(49); // 2 + 98 bytes of JSON text, 51 characters
    expect(jsonSnapshot(atLimit, "the value", 100).text).toBe(JSON.stringify(atLimit));
    const error = (() => {
      try {
        toJson(`${atLimit}a`, 'the result of tool "x" (run r1, step 3)', 100);
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(PayloadTooLargeError);
    expect(error).toMatchObject({ code: "PAYLOAD_TOO_LARGE", bytes: 101, limit: 100, retryable: false });
    expect((error as Error).message).toBe(
      `the result of tool "x" (run r1, step 3) is 101 bytes of JSON, over the limit of 100 bytes (maxPayloadBytes); store the data elsewhere (a file, an object store, a table of your own) and pass a reference to it, or raise the runtime's maxPayloadBytes`,
    );
  });

  it("words large sizes in KiB and MiB with the exact count", () => {
    expect(() => toJson("x".repeat(DEFAULT_MAX_PAYLOAD_BYTES), "the input", DEFAULT_MAX_PAYLOAD_BYTES)).toThrow(
      "the input is 16 MiB (16777218 bytes) of JSON, over the limit of 16 MiB (16777216 bytes)",
    );
    expect(() => toJson("x".repeat(2000), "the input", 1536)).toThrow(
      "is 2 KiB (2002 bytes) of JSON, over the limit of 1.5 KiB (1536 bytes)",
    );
  });

  it("checks nothing without a limit, and still refuses what is not JSON", () => {
    expect(toJson("x".repeat(1000), "the value")).toHaveLength(1000);
    expect(() => toJson(() => 1, "the value", 100)).toThrow(NotSerializableError);
    expect(toJson(undefined, "the value", 1)).toBeUndefined();
  });
});

describe("deserializeError", () => {
  const cairnErrors: CairnError[] = [
    new ContextOverflowError("too long", { provider: "openai.chat", status: 400 }),
    new ModelUnavailableError("busy", { provider: "anthropic.messages", status: 529, retryAfterMs: 2000 }),
    new BudgetExceededError("over", { budget: "costUsd", figure: 1.5, limit: 1 }),
    new PolicyDeniedError("no", { policy: "pii", policyVersion: "2" }),
    new UnknownNameError("UNKNOWN_MODEL", 'unknown model "x"'),
    new EffectRefusedError("closed"),
    new InvalidInputError("bad", [{ path: ["a", 0], message: "required" }]),
    new HistoryLimitError("full", { measure: "bytes", figure: 11, limit: 10 }),
    new RunEndedError({ runId: "r1", state: "BLOCKED", error: { name: "E", message: "m" } }),
    new ToolFailedError("failed", { tool: "t", attempts: 3 }, { cause: new StepTimeoutError("slow") }),
  ];

  it("rebuilds every Cairn error into its own class with its data, message, stack and cause", () => {
    for (const error of cairnErrors) {
      const stored = JSON.parse(JSON.stringify(serializeError(error))) as SerializedError;
      const revived = deserializeError(stored);
      expect(revived).toBeInstanceOf(error.constructor);
      expect(revived).toBeInstanceOf(Error);
      expect(revived).toMatchObject({ ...error, message: error.message, stack: error.stack });
      expect((revived as CairnError).retryable).toBe(error.retryable);
      expect(serializeError(revived)).toEqual(stored);
    }
    const tool = deserializeError(serializeError(cairnErrors.at(-1))) as ToolFailedError;
    expect(tool.cause).toBeInstanceOf(StepTimeoutError);
    expect((tool.cause as StepTimeoutError).retryable).toBe(true);
  });

  it("gives any other error a ReplayedError with its name, message and code, also when the code looks like Cairn's", () => {
    class Mine extends Error {
      override readonly name = "Mine";
      readonly code = "CONTEXT_OVERFLOW";
    }
    const revived = deserializeError(serializeError(new Mine("not Cairn's")));
    expect(revived).toBeInstanceOf(ReplayedError);
    expect(revived).not.toBeInstanceOf(ContextOverflowError);
    expect(revived).toMatchObject({ name: "Mine", code: "CONTEXT_OVERFLOW", message: "not Cairn's" });
    const wrapped = deserializeError(
      serializeError(new Error("outer", { cause: new PolicyDeniedError("p", { policy: "x", policyVersion: "1" }) })),
    );
    expect(wrapped).toBeInstanceOf(ReplayedError);
    expect(wrapped.cause).toBeInstanceOf(PolicyDeniedError);
  });
});
