import { describe, expect, it } from "vitest";
import { OutputTail } from "./output-tail.ts";

describe("OutputTail", () => {
  it("keeps short output whole", () => {
    const tail = new OutputTail(16);
    tail.push("a\n");
    tail.push("b");
    expect(tail.text()).toBe("a\nb");
  });

  it("keeps the last characters from a whole line once output was dropped", () => {
    const tail = new OutputTail(10);
    for (let i = 0; i < 100; i++) tail.push(`line ${i}\n`);
    expect(tail.text()).toBe("line 99\n");
  });

  it("keeps the cut text when no line ends inside it", () => {
    const tail = new OutputTail(4);
    tail.push("x".repeat(20));
    expect(tail.text()).toBe("xxxx");
  });

  it("never starts inside a surrogate pair", () => {
    const tail = new OutputTail(3);
    tail.push("a😀bb");
    expect(tail.text()).toBe("bb");
    expect(tail.text().isWellFormed()).toBe(true);
  });
});
