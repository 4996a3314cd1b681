import { ROLES, type Role } from "../api/roles.ts";
import { textProblem } from "../core/text.ts";
import type { Principal } from "./auth.ts";
import { ApiError } from "./errors.ts";

/**
 * The identity switch of a development server (`cairn dev`, `createServer({ switchIdentity })`):
 * with no tokens there is nobody to authenticate, so a request may say who it acts as —
 * `X-Cairn-As: <subject>` and `X-Cairn-Role: viewer|operator|approver|admin` — and the dashboard
 * lets its user be the finance lead who approves, or a viewer who only reads. Only without tokens:
 * a server with tokens takes who acts from the token alone. A page of another origin cannot send
 * these headers (they need a CORS preflight, which this server never grants) and is refused by
 * the origin guard besides.
 */

/** The header naming the subject a request acts as. */
export const AS_HEADER = "x-cairn-as";
/** The header naming the role a request acts with. */
export const ROLE_HEADER = "x-cairn-role";

const MAX_SUBJECT = 200;

/** The principal a request names with the headers, over `local` (the `--as` subject, admin). */
export function switchedPrincipal(local: Principal, header: (name: string) => string | undefined): Principal {
  const subject = header(AS_HEADER)?.trim();
  const role = header(ROLE_HEADER)?.trim();
  if (!subject && !role) return local;
  if (subject !== undefined && subject !== "") checkSubject(subject);
  if (role !== undefined && role !== "" && !(ROLES as readonly string[]).includes(role)) {
    throw new ApiError(
      "INVALID_INPUT",
      `X-Cairn-Role ${JSON.stringify(role)} is not a role; use one of ${ROLES.join(", ")}`,
      {
        path: ["X-Cairn-Role"],
      },
    );
  }
  return Object.freeze({
    subject: subject || local.subject,
    roles: Object.freeze(role ? [role as Role] : [...local.roles]),
    auth: "none" as const,
  });
}

function checkSubject(subject: string): void {
  const problem =
    subject.length > MAX_SUBJECT
      ? `is longer than ${MAX_SUBJECT} characters`
      : (textProblem(subject) ?? (/\p{Cc}/u.test(subject) ? "holds a control character" : undefined));
  if (problem) {
    throw new ApiError("INVALID_INPUT", `X-Cairn-As ${problem}; name who you act as (e.g. finance-lead)`, {
      path: ["X-Cairn-As"],
    });
  }
}
