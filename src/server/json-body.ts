import type { MiddlewareHandler } from "hono";
import type { ServerEnv } from "./auth.ts";
import { ApiError } from "./errors.ts";
import { scanJsonText } from "./json-scan.ts";

/**
 * Reads a request's JSON body before the route's zod validator sees it, so that every way a body
 * can be wrong gets its own code: larger than the limit (413 BODY_TOO_LARGE, counted as it
 * arrives, so an oversized body is never held whole), not JSON (400 MALFORMED_JSON), sent as
 * something other than JSON (415 UNSUPPORTED_MEDIA_TYPE), a value JSON.parse would change
 * silently — a number that overflows to Infinity, an integer past 2^53, nesting past a payload's
 * limit (400 INVALID_INPUT naming its path; json-scan.ts). An empty body is `{}`. The text is put
 * back on the request as `application/json` for the validator.
 */

/** The default body limit: 1 MiB. */
export const DEFAULT_BODY_LIMIT_BYTES = 1024 * 1024;

/** The body middleware of the mutating routes; the limit comes from the server (`bodyLimitBytes`). */
export const jsonBody: MiddlewareHandler<ServerEnv> = async (c, next) => {
  const limit = c.get("bodyLimitBytes");
  const length = c.req.header("content-length");
  if (length !== undefined && Number(length) > limit) throw tooLarge(Number(length), limit);
  const bytes = await readLimited(c.req.raw, limit);
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw new ApiError("MALFORMED_JSON", "the request body is not UTF-8 text; send JSON");
  }
  if (text.trim() === "") {
    text = "{}";
  } else {
    const type = c.req.header("content-type");
    if (type !== undefined && !/^application\/([\w.-]+\+)?json\s*(;|$)/i.test(type)) {
      throw new ApiError(
        "UNSUPPORTED_MEDIA_TYPE",
        `the request body is ${type.split(";")[0]}; send JSON with Content-Type: application/json`,
      );
    }
    try {
      JSON.parse(text);
    } catch (error) {
      throw new ApiError("MALFORMED_JSON", `the request body is not valid JSON: ${(error as Error).message}`);
    }
    const problem = scanJsonText(text);
    if (problem) {
      const where = problem.path.length > 0 ? problem.path.join(".") : "(root)";
      throw new ApiError("INVALID_INPUT", `invalid request body: ${where}: ${problem.message} (nothing was written)`, {
        target: "body",
        issues: [{ path: problem.path.map(String), message: problem.message }],
      });
    }
  }
  const headers = new Headers(c.req.raw.headers);
  headers.set("content-type", "application/json");
  headers.delete("content-length");
  c.req.raw = new Request(c.req.raw.url, { method: c.req.raw.method, headers, body: text, signal: c.req.raw.signal });
  return next();
};

async function readLimited(request: Request, limit: number): Promise<Uint8Array> {
  if (!request.body) return new Uint8Array(0);
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => {});
      throw tooLarge(size, limit);
    }
    chunks.push(value);
  }
  const out = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return out;
}

function tooLarge(bytes: number, limit: number): ApiError {
  return new ApiError(
    "BODY_TOO_LARGE",
    `the request body is larger than this server takes (${limit} bytes${bytes > limit ? `; got at least ${bytes}` : ""}); keep large data elsewhere and pass a reference, or raise the server's bodyLimitBytes`,
    { limit },
  );
}
