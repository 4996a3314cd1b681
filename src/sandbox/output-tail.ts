/** The last characters of a command's output (both streams, in arrival order), for its result. */
export class OutputTail {
  readonly #max: number;
  #text = "";
  #cut = false;

  /** @param max Characters kept. @default 4096 */
  constructor(max = 4096) {
    this.#max = max;
  }

  push(text: string): void {
    this.#text += text;
    if (this.#text.length > 2 * this.#max) this.#trim();
  }

  #trim(): void {
    if (this.#text.length <= this.#max) return;
    let start = this.#text.length - this.#max;
    // Never split a surrogate pair: the tail is stored as text.
    if (/[\uDC00-\uDFFF]/.test(this.#text[start] ?? "")) start++;
    this.#text = this.#text.slice(start);
    this.#cut = true;
  }

  /** The tail; once output was dropped, from the first whole line on (when there is one). */
  text(): string {
    this.#trim();
    if (!this.#cut) return this.#text;
    const newline = this.#text.indexOf("\n");
    return newline >= 0 && newline < this.#text.length - 1 ? this.#text.slice(newline + 1) : this.#text;
  }
}
