/**
 * What `CairnClient` throws when the server answers with an error: the server's code (a
 * `CairnErrorCode` such as `RUN_NOT_FOUND`, or one of the server's own such as `FORBIDDEN`), the
 * HTTP status and the server's message. A failure to reach the server is `fetch`'s own error.
 */
export class CairnHttpError extends Error {
  /** The error code of the body (`HTTP_<status>` when the body had none). */
  readonly code: string;
  readonly status: number;
  /** The body's `details`, when it had any (validation issues, an approval refusal's `why` …). */
  readonly details: unknown;

  constructor(message: string, details: { code: string; status: number; details?: unknown }) {
    super(message);
    this.name = "CairnHttpError";
    this.code = details.code;
    this.status = details.status;
    this.details = details.details;
  }

  /** The error of a response whose body was `text`. */
  static fromResponse(status: number, text: string): CairnHttpError {
    let body: { error?: { code?: unknown; message?: unknown; details?: unknown } } | undefined;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    const error = body?.error;
    const code = typeof error?.code === "string" ? error.code : `HTTP_${status}`;
    const message =
      typeof error?.message === "string"
        ? error.message
        : `the server answered ${status}${text ? `: ${text.slice(0, 200)}` : ""}`;
    return new CairnHttpError(message, { code, status, details: error?.details });
  }
}
