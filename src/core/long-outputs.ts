import type { ModelTool } from "./model-messages.ts";
import type { Json } from "./records.ts";

/**
 * The tool outputs of an agent loop too long for the conversation (`maxToolOutputChars`), and the
 * built-in tool that pages through them.
 */
export class LongOutputs {
  readonly #stored: string[] = [];
  readonly #max: number;
  readonly name: string;

  constructor(max: number, name: string) {
    this.#max = max;
    this.name = name;
  }

  get size(): number {
    return this.#stored.length;
  }

  /** The output as the model sees it: whole, or head, tail and a reference. */
  fit(value: unknown): string {
    const text = typeof value === "string" ? value : (JSON.stringify(value) ?? "null");
    if (text.length <= this.#max) return text;
    this.#stored.push(text);
    const ref = `out-${this.#stored.length}`;
    const head = text.slice(0, Math.floor(this.#max * 0.6));
    const tail = text.slice(text.length - Math.floor(this.#max * 0.2));
    return `${head}\n[… ${text.length - head.length - tail.length} of ${text.length} characters not shown; read them with ${this.name}({ "ref": "${ref}", "offset": ${head.length} }) …]\n${tail}`;
  }

  tool(): ModelTool {
    return {
      name: this.name,
      description:
        "Reads part of a tool output that was too long to show whole. Pass the ref it gave, the character offset to start at, and how many characters to read.",
      inputSchema: {
        type: "object",
        properties: {
          ref: { type: "string", description: 'The reference, e.g. "out-1".' },
          offset: { type: "integer", minimum: 0, description: "Character offset to start at." },
          length: { type: "integer", minimum: 1, description: `Characters to read (at most ${this.#max}).` },
        },
        required: ["ref"],
        additionalProperties: false,
      },
    };
  }

  read(args: Json): { content: string; isError: boolean } {
    const a = (args ?? {}) as { ref?: unknown; offset?: unknown; length?: unknown };
    const index = typeof a.ref === "string" ? Number(/^out-(\d+)$/.exec(a.ref)?.[1]) - 1 : Number.NaN;
    const text = this.#stored[index];
    if (text === undefined) {
      const refs = this.#stored.map((_, i) => `out-${i + 1}`).join(", ");
      return { content: `Error: no output "${String(a.ref)}" (there are: ${refs}).`, isError: true };
    }
    const offset = typeof a.offset === "number" && a.offset >= 0 ? Math.floor(a.offset) : 0;
    const length = Math.min(
      this.#max,
      typeof a.length === "number" && a.length >= 1 ? Math.floor(a.length) : this.#max,
    );
    const part = text.slice(offset, offset + length);
    const end = offset + part.length;
    return {
      content: `${a.ref} characters ${offset}–${end} of ${text.length}${end < text.length ? ` (continue at offset ${end})` : " (the end)"}:\n${part}`,
      isError: false,
    };
  }
}
