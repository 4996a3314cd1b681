import { useState } from "preact/hooks";
import { ROLES } from "../../src/api/http-api.ts";
import { type AgentInfo, getIdentity, type Me, setIdentity } from "./api.ts";

/**
 * The identity switcher of a development server (`cairn dev`: `/api/me` says `switchable`): act
 * as anyone — the approvers the agents declare are offered — with any role, to approve as the
 * finance lead or to see what a viewer sees. The server records what is done as that subject.
 */
export function IdentitySwitcher(props: { me: Me; agents: AgentInfo[] | null }) {
  const chosen = getIdentity();
  const [subject, setSubject] = useState(chosen?.subject ?? props.me.subject);
  const [role, setRole] = useState(chosen?.role ?? "");
  const approvers = [...new Set((props.agents ?? []).flatMap((a) => a.approvers ?? []))];
  return (
    <form
      class="identity"
      data-testid="identity-switcher"
      onSubmit={(e) => {
        e.preventDefault();
        const name = subject.trim();
        setIdentity(name || role ? { subject: name, ...(role && { role }) } : null);
      }}
    >
      <label class="small">
        act as
        <input
          list="identity-approvers"
          value={subject}
          onInput={(e) => setSubject(e.currentTarget.value)}
          data-testid="identity-subject"
          placeholder="who"
          size={12}
        />
      </label>
      <datalist id="identity-approvers">
        {approvers.map((a) => (
          <option key={a} value={a}>
            approver
          </option>
        ))}
      </datalist>
      <select
        value={role}
        onChange={(e) => setRole(e.currentTarget.value)}
        data-testid="identity-role"
        aria-label="role"
      >
        <option value="">admin (default)</option>
        {ROLES.map((r) => (
          <option key={r} value={r}>
            {r}
          </option>
        ))}
      </select>
      <button type="submit" data-testid="identity-apply">
        Switch
      </button>
      {chosen && (
        <button type="button" class="link small" onClick={() => setIdentity(null)} data-testid="identity-reset">
          reset
        </button>
      )}
    </form>
  );
}

/** Acts as `subject` (with the approver role) at once: the fix a refused decision offers. */
export function actAs(subject: string): void {
  setIdentity({ subject, role: "approver" });
}
