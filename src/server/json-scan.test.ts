import { describe, expect, it } from "vitest";
import { MAX_JSON_DEPTH } from "../core/serialize.ts";
import { scanJsonText } from "./json-scan.ts";

describe("scanJsonText", () => {
  it("finds numbers that would overflow to Infinity, naming their path", () => {
    expect(scanJsonText('{"input":{"a":[1,2,{"b":1e309}]}}')).toEqual({
      path: ["input", "a", 2, "b"],
      message: expect.stringMatching(/^the number 1e309 is too large .*Infinity/),
    });
    expect(scanJsonText('{"x":-1E400}')?.message).toMatch(/-Infinity/);
    expect(scanJsonText('{"x":1.7976931348623157e308,"y":1e-400,"z":12345678901234567890.5}')).toBeUndefined();
  });

  it("finds integer literals past 2^53 - 1, and only integer literals", () => {
    expect(scanJsonText(`{"n":${Number.MAX_SAFE_INTEGER},"m":-${Number.MAX_SAFE_INTEGER}}`)).toBeUndefined();
    expect(scanJsonText('{"meta":{"ids":[1,9007199254740993]}}')).toEqual({
      path: ["meta", "ids", 1],
      message: expect.stringMatching(
        /^the integer 9007199254740993 is past 2\^53 - 1 .* would read as 9007199254740992/,
      ),
    });
    expect(scanJsonText('{"n":-9007199254740993}')?.path).toEqual(["n"]);
    expect(scanJsonText('{"n":-9007199254740992}')).toBeUndefined();
    expect(scanJsonText('{"n":9007199254740993.0,"m":1e20}')).toBeUndefined();
    // Integers a double holds exactly read back as written: 2^60, and large doubles as encoders write them.
    expect(scanJsonText(`[${2 ** 60}, 100000000000000000000, ${JSON.stringify(1e20 / 3)}]`)).toBeUndefined();
    expect(scanJsonText("[12345678901234567891]")?.message).toMatch(/would read as 12345678901234567000/);
  });

  it("reads keys as JSON (escapes, quotes, brackets and digits inside strings are text)", () => {
    const text = JSON.stringify({ 'a"b': { "c\\d": ["[{", "99999999999999999999", { "1e999": 1e20 / 3 }] } });
    expect(scanJsonText(text)).toBeUndefined();
    expect(scanJsonText('{"a\\"b":{"k\\u0041":[0,{"x":[99999999999999999999]}]}}')?.path).toEqual([
      'a"b',
      "kA",
      1,
      "x",
      0,
    ]);
    expect(scanJsonText("[1, 2 ,\n 3, 18446744073709551616]")?.path).toEqual([3]);
    expect(scanJsonText("18446744073709551616")?.path).toEqual([]);
  });

  it("allows a payload nested as deep as a payload may, inside the body, and no deeper", () => {
    const nest = (depth: number) => `{"input":${"[".repeat(depth)}${"]".repeat(depth)}}`;
    expect(scanJsonText(nest(MAX_JSON_DEPTH))).toBeUndefined();
    const deep = scanJsonText(nest(MAX_JSON_DEPTH + 1));
    expect(deep?.message).toMatch(/more than 512 levels/);
    expect(deep?.path.slice(0, 2)).toEqual(["input", 0]);
    expect(scanJsonText(nest(100_000))?.message).toMatch(/more than 512 levels/);
  });
});
