import { createHash } from "node:crypto";
import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { ChatMessage } from "../../src/index.ts";

/**
 * Where the session's transcript is kept between turns: a content-addressed folder of JSON files
 * (`sha256-<hex>.json`), standing in for an object store. The journal keeps only a transcript's
 * key; a successor run after `continueAsNew` loads the conversation by that key.
 */
export class TranscriptStore {
  readonly dir: string;

  constructor(dir: string) {
    this.dir = dir;
  }

  #file(key: string): string {
    if (!/^sha256:[0-9a-f]{64}$/.test(key)) throw new Error(`"${key}" is not a transcript key (sha256:<hex>)`);
    return join(this.dir, `${key.replace(":", "-")}.json`);
  }

  /** Stores a transcript; the same messages twice are one file and one key. */
  async put(messages: readonly ChatMessage[]): Promise<string> {
    const text = JSON.stringify(messages);
    const key = `sha256:${createHash("sha256").update(text).digest("hex")}`;
    const file = this.#file(key);
    await mkdir(this.dir, { recursive: true });
    await writeFile(`${file}.${process.pid}.tmp`, text);
    await rename(`${file}.${process.pid}.tmp`, file);
    return key;
  }

  /** The transcript stored under `key` (an empty one for `null`). */
  async get(key: string | null): Promise<ChatMessage[]> {
    if (key === null) return [];
    return JSON.parse(await readFile(this.#file(key), "utf8")) as ChatMessage[];
  }

  /** Stores `previous`'s messages followed by `added`; returns the new key. */
  async append(previous: string | null, added: readonly ChatMessage[]): Promise<string> {
    return this.put([...(await this.get(previous)), ...added]);
  }
}
