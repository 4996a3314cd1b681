import { describe, expect, it } from "vitest";
import { InvalidInputError } from "./errors.ts";
import { checkText, storableText, textProblem } from "./text.ts";

describe("text rules", () => {
  it("names the first NUL or lone surrogate and where it is", () => {
    expect(textProblem("plain é 😀")).toBeUndefined();
    expect(textProblem("ab\u0000c")).toBe("a NUL character (U+0000) at index 2");
    expect(textProblem("a\ud800b\u0000")).toMatch(/lone UTF-16 surrogate \(U\+D800\) at index 1/);
    expect(textProblem("x\u0000\udfff")).toMatch(/NUL character .* at index 1/);
    expect(textProblem("\udc00")).toMatch(/U\+DC00\) at index 0/);
  });

  it("refuses bad text naming the field and the fix, and passes good text through", () => {
    expect(checkText("key-1", "key")).toBe("key-1");
    expect(() => checkText("k\u0000", "key")).toThrow(InvalidInputError);
    expect(() => checkText("k\u0000", "key")).toThrow(/^key contains a NUL character .*without NUL characters/);
    expect(() => checkText(5, "key")).toThrow(/key must be a string \(got number\)/);
    expect(() => checkText("", "key")).toThrow(/must not be empty/);
    expect(checkText("", "note", { allowEmpty: true })).toBe("");
    expect(() => checkText("x".repeat(11), "name", { maxLength: 10 })).toThrow(
      /11 characters long, over the limit of 10/,
    );
  });

  it("makes text storable: NUL and lone surrogates become U+FFFD, pairs stay", () => {
    expect(storableText("a\u0000b\ud800c\ud83d\ude00")).toBe("a\ufffdb\ufffdc\ud83d\ude00");
    const plain = "plain text";
    expect(storableText(plain)).toBe(plain);
  });
});
