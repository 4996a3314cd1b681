import type { APICallError } from "@ai-sdk/provider";
import { CairnError, ContextOverflowError, ModelRequestError, ModelUnavailableError } from "../core/errors.ts";
import { aiSdkProvider } from "./ai-sdk-peers.ts";

/**
 * What a failed AI SDK call means for the runtime, which owns retries: a class that says whether a
 * retry can succeed, and a message naming the provider, the status and the provider's own words.
 */

/** Statuses a retry can mend: timeout, conflict, rate limit, and every server error (Anthropic's 529 too). */
const RETRYABLE_STATUSES = new Set([408, 409, 429]);

/** Network failures (no answer at all): a retry can succeed. */
const NETWORK_CODES = new Set([
  "ECONNRESET",
  "ECONNREFUSED",
  "ECONNABORTED",
  "ETIMEDOUT",
  "EPIPE",
  "ENOTFOUND",
  "EAI_AGAIN",
  "ENETUNREACH",
  "EHOSTUNREACH",
  "UND_ERR_SOCKET",
  "UND_ERR_CLOSED",
  "UND_ERR_CONNECT_TIMEOUT",
  "UND_ERR_HEADERS_TIMEOUT",
  "UND_ERR_BODY_TIMEOUT",
]);

/**
 * How providers say a request is larger than the context window: OpenAI's code
 * `context_length_exceeded` ("This model's maximum context length is …"), Anthropic's "prompt is
 * too long", and the wording of OpenAI-compatible servers (vLLM, llama.cpp, Ollama …).
 */
const CONTEXT_OVERFLOW =
  /context_length_exceeded|maximum context length|context length|prompt is too long|input is too long|context window|too many tokens|exceeds? the context|context size/i;

/**
 * Turns whatever an AI SDK model threw into the error the runtime acts on:
 * - `ModelUnavailableError` (retried, waiting at least `retryAfterMs`): 408, 409, 429, 5xx,
 *   no status (the request never got an answer), a response that could not be read;
 * - `ContextOverflowError` (not retried): a 400 or 413 that says the context is too long;
 * - `ModelRequestError` (not retried): any other 4xx, and a request the SDK refused to send
 *   (no API key, a prompt or setting the model does not support).
 *
 * Cairn errors come back as they are; anything else unknown too (the retry policy decides).
 */
export function modelError(error: unknown, provider: string): Error {
  if (error instanceof CairnError) return error;
  const {
    APICallError,
    EmptyResponseBodyError,
    InvalidArgumentError,
    InvalidPromptError,
    InvalidResponseDataError,
    JSONParseError,
    LoadAPIKeyError,
    LoadSettingError,
    NoSuchModelError,
    TypeValidationError,
    UnsupportedFunctionalityError,
  } = aiSdkProvider();
  if (APICallError.isInstance(error)) return apiCallError(error, provider);
  if (
    InvalidResponseDataError.isInstance(error) ||
    JSONParseError.isInstance(error) ||
    TypeValidationError.isInstance(error) ||
    EmptyResponseBodyError.isInstance(error)
  ) {
    return new ModelUnavailableError(
      `${provider} sent a response that could not be read: ${error.message}`,
      { provider },
      { cause: error },
    );
  }
  if (
    LoadAPIKeyError.isInstance(error) ||
    LoadSettingError.isInstance(error) ||
    InvalidPromptError.isInstance(error) ||
    InvalidArgumentError.isInstance(error) ||
    UnsupportedFunctionalityError.isInstance(error) ||
    NoSuchModelError.isInstance(error)
  ) {
    return new ModelRequestError(
      `${provider} cannot make this request: ${error.message}`,
      { provider },
      { cause: error },
    );
  }
  if (isNetworkError(error)) {
    return new ModelUnavailableError(
      `${provider} could not be reached: ${describe(error)}`,
      { provider },
      { cause: error },
    );
  }
  return error instanceof Error ? error : new Error(`${provider} failed: ${describe(error)}`);
}

function apiCallError(error: APICallError, provider: string): Error {
  const status = error.statusCode;
  const said = error.message.trim() || "(no message)";
  if (status === undefined) {
    return new ModelUnavailableError(`${provider} could not be reached: ${said}`, { provider }, { cause: error });
  }
  if (status < 300) {
    // The success status came, then the body broke off or could not be parsed.
    return new ModelUnavailableError(
      `${provider} answered ${status} but its response could not be read: ${describe(error)}`,
      { provider, status },
      { cause: error },
    );
  }
  if ((status === 400 || status === 413) && CONTEXT_OVERFLOW.test(`${said}\n${error.responseBody ?? ""}`)) {
    return new ContextOverflowError(
      `${provider} answered ${status}: ${said.replace(/[.\s]+$/, "")}. The request is larger than the model's context window: shorten the conversation (fewer or shorter messages, smaller tool results) or use a model with a larger window.`,
      { provider, status },
      { cause: error },
    );
  }
  if (RETRYABLE_STATUSES.has(status) || status >= 500) {
    const wait = retryAfterMs(error.responseHeaders);
    return new ModelUnavailableError(
      `${provider} answered ${status}: ${said}${wait === undefined ? "" : ` (retry after ${wait} ms)`}`,
      { provider, status, retryAfterMs: wait },
      { cause: error },
    );
  }
  return new ModelRequestError(`${provider} answered ${status}: ${said}`, { provider, status }, { cause: error });
}

/**
 * How long a provider asked to wait, in milliseconds, from its response headers: `retry-after-ms`
 * (OpenAI), else `retry-after` in seconds or as an HTTP date. Undefined when it did not say.
 */
export function retryAfterMs(
  headers: Record<string, string | undefined> | undefined,
  now: number = Date.now(),
): number | undefined {
  if (!headers) return undefined;
  const header = (name: string) => {
    for (const [key, value] of Object.entries(headers)) if (key.toLowerCase() === name) return value?.trim();
    return undefined;
  };
  const ms = header("retry-after-ms");
  if (ms && /^\d+(\.\d+)?$/.test(ms)) return Math.ceil(Number(ms));
  const after = header("retry-after");
  if (!after) return undefined;
  if (/^\d+(\.\d+)?$/.test(after)) return Math.ceil(Number(after) * 1000);
  const at = Date.parse(after);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** A failure to get any answer: fetch failed, a reset or refused connection, a DNS failure. */
function isNetworkError(error: unknown): boolean {
  const seen = new Set<unknown>();
  let current = error;
  while (current instanceof Error && !seen.has(current)) {
    seen.add(current);
    const code = (current as { code?: unknown }).code;
    if (typeof code === "string" && NETWORK_CODES.has(code)) return true;
    if (current instanceof TypeError && /fetch failed|failed to fetch|terminated/i.test(current.message)) return true;
    current = current.cause;
  }
  return false;
}

/** An error's message with its causes, for a message that says what happened. */
export function describe(error: unknown): string {
  if (!(error instanceof Error)) {
    if (typeof error === "object" && error !== null && typeof (error as { message?: unknown }).message === "string") {
      const e = error as { type?: unknown; message: string };
      return typeof e.type === "string" ? `${e.type}: ${e.message}` : e.message;
    }
    try {
      return JSON.stringify(error) ?? String(error);
    } catch {
      return String(error);
    }
  }
  const parts = [error.message];
  let cause = error.cause;
  for (let depth = 0; cause instanceof Error && depth < 3; depth++) {
    if (cause.message && !parts.includes(cause.message)) parts.push(cause.message);
    cause = cause.cause;
  }
  return parts.filter(Boolean).join(": ") || error.name;
}
