import { request } from "node:http";

/** An answer of the bank. */
export interface BankResponse {
  status: number;
  body: any;
}

/**
 * The request never reached the bank: nothing listens at its address (ECONNREFUSED), so the
 * operation surely did not happen. Anything else that fails after the request left (a dropped
 * connection, a timeout, a 5xx) leaves the outcome unknown.
 */
export class BankUnreachableError extends Error {
  override readonly name = "BankUnreachableError";
}

/**
 * One request to the bank, on a connection of its own (no keep-alive: a request is never
 * written onto a socket the bank already closed, and nothing keeps the process alive).
 */
export function callBank(
  baseUrl: string,
  method: "GET" | "POST",
  path: string,
  body?: unknown,
  signal?: AbortSignal,
): Promise<BankResponse> {
  const url = new URL(path, baseUrl);
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise<BankResponse>((resolve, reject) => {
    const req = request(
      url,
      {
        method,
        agent: false,
        headers:
          payload === undefined
            ? {}
            : { "content-type": "application/json", "content-length": Buffer.byteLength(payload) },
        ...(signal ? { signal } : {}),
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => (text += chunk));
        res.on("error", reject);
        res.on("end", () => {
          if (!res.complete) return reject(new Error(`the bank's answer to ${method} ${path} was cut off`));
          try {
            resolve({ status: res.statusCode ?? 0, body: text === "" ? undefined : JSON.parse(text) });
          } catch {
            reject(
              new Error(
                `the bank answered ${method} ${path} with ${res.statusCode} and no JSON: ${text.slice(0, 200)}`,
              ),
            );
          }
        });
      },
    );
    req.on("error", (err: NodeJS.ErrnoException) => {
      if (err.code === "ECONNREFUSED") {
        reject(
          new BankUnreachableError(`the bank at ${baseUrl} refused the connection (${method} ${path})`, { cause: err }),
        );
      } else {
        reject(err);
      }
    });
    req.end(payload);
  });
}
