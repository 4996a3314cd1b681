import { describe, expect, it } from "vitest";
import { NotSerializableError, PayloadTooLargeError } from "./errors.ts";
import { DEFAULT_MAX_PAYLOAD_BYTES, jsonSnapshot, toJson } from "./serialize.ts";

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
