/**
 * The parts every route of the HTTP API is described with (`routes.ts`): response shapes, the
 * error responses each kind of route may give, request bodies, and the middleware of each role.
 */
import type { z } from "@hono/zod-openapi";
import type { MiddlewareHandler } from "hono";
import { requires, type ServerEnv } from "./auth.ts";
import { jsonBody } from "./json-body.ts";
import { ErrorBodySchema } from "./schemas.ts";

export const ok = <S extends z.ZodType>(schema: S, description: string) => ({
  content: { "application/json": { schema } },
  description,
});

export const failure = (description: string) => ({
  content: { "application/json": { schema: ErrorBodySchema } },
  description,
});

/** The error responses every route may give. */
export const common = {
  401: failure("UNAUTHENTICATED: no token, or an unknown one"),
  403: failure("FORBIDDEN: the token's roles do not allow this"),
} as const;
export const reads = { ...common, 404: failure("RUN_NOT_FOUND") } as const;
export const acts = {
  ...common,
  400: failure("INVALID_INPUT or MALFORMED_JSON"),
  404: failure("RUN_NOT_FOUND, WAIT_NOT_FOUND or EFFECT_NOT_FOUND"),
  409: failure(
    "the run is not in a state that takes this (RUN_NOT_OPEN, WAIT_CLOSED, SIGNAL_INBOX_FULL, ILLEGAL_TRANSITION …)",
  ),
  413: failure("BODY_TOO_LARGE or PAYLOAD_TOO_LARGE"),
  415: failure("UNSUPPORTED_MEDIA_TYPE"),
} as const;
export const security = [{ bearer: [] }];

export const body = <S extends z.ZodType>(schema: S) => ({
  content: { "application/json": { schema } },
  required: true,
});

export type Middleware = MiddlewareHandler<ServerEnv>;
export const read: [Middleware] = [requires("read")];
export const operate: [Middleware, Middleware] = [requires("operate"), jsonBody];
export const approve: [Middleware, Middleware] = [requires("approve"), jsonBody];
export const administer: [Middleware, Middleware] = [requires("administer"), jsonBody];
