import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { type AgentInfo, ApiError, api, getToken, type Me, onAuth, setToken } from "./api.ts";
import { IdentitySwitcher } from "./identity.tsx";
import { SCHEDULES_HREF, useRoute } from "./router.ts";
import { RunPage } from "./run-page.tsx";
import { RunsPage } from "./runs-page.tsx";
import { SchedulesPage } from "./schedules-page.tsx";
import { MeContext } from "./session.ts";
import "./styles.css";

/** The dashboard: who is signed in (or a token box), then the runs table, one run or the schedules. */
function App() {
  const route = useRoute();
  const [me, setMe] = useState<Me | null>(null);
  const [needToken, setNeedToken] = useState(false);
  const [agents, setAgents] = useState<AgentInfo[] | null>(null);
  // Bumped when the token changes: pages remount, refetch and reopen their streams with it.
  const [session, setSession] = useState(0);

  useEffect(() => onAuth((needed) => (needed ? setNeedToken(true) : setSession((n) => n + 1))), []);

  useEffect(() => {
    api.me().then(
      (m) => {
        setMe(m);
        setNeedToken(false);
      },
      (e: Error) => {
        setMe(null);
        if (e instanceof ApiError && (e.status === 401 || e.status === 403)) setNeedToken(true);
      },
    );
    api.agents().then(
      (r) => setAgents(r.agents),
      () => setAgents((old) => old ?? []),
    );
  }, [session]);

  return (
    <MeContext.Provider value={me}>
      <header class="top">
        <a class="brand" href="#/runs">
          cairn
        </a>
        <nav>
          <a href="#/runs" class={route.page === "runs" ? "on" : ""}>
            Runs
          </a>
          <a href={SCHEDULES_HREF} class={route.page === "schedules" ? "on" : ""} data-testid="nav-schedules">
            Schedules
          </a>
        </nav>
        <div class="who">
          {me && (
            <span class="small" data-testid="me">
              {me.auth === "none" && !me.switchable ? (
                <span class="muted">no sign-in</span>
              ) : (
                <>
                  {me.subject}
                  {me.roles.length > 0 && <span class="muted"> ({me.roles.join(", ")})</span>}
                </>
              )}
            </span>
          )}
          {me?.switchable && <IdentitySwitcher me={me} agents={agents} />}
          <TokenBox needed={needToken} signedIn={me?.auth === "token"} />
        </div>
      </header>
      <main key={session}>
        {route.page === "run" ? (
          <RunPage key={route.id} id={route.id} />
        ) : route.page === "schedules" ? (
          <SchedulesPage />
        ) : (
          <RunsPage query={route.query} agents={agents} />
        )}
      </main>
    </MeContext.Provider>
  );
}

/** The bearer token, kept in this tab's sessionStorage: asked for when the API answers 401. */
function TokenBox(props: { needed: boolean; signedIn: boolean }) {
  const [value, setValue] = useState(getToken);
  if (props.signedIn) {
    return (
      <button type="button" class="link small" onClick={() => setToken("")} data-testid="sign-out">
        forget token
      </button>
    );
  }
  if (!props.needed) return null;
  return (
    <form
      class="token-box"
      data-testid="token-form"
      onSubmit={(e) => {
        e.preventDefault();
        setToken(value.trim());
      }}
    >
      <span class="small warn">The server needs a token:</span>
      <input
        type="password"
        placeholder="paste your API token"
        value={value}
        onInput={(e) => setValue(e.currentTarget.value)}
        data-testid="token-input"
        autocomplete="off"
      />
      <button type="submit" class="primary" data-testid="token-save">
        Save
      </button>
    </form>
  );
}

render(<App />, document.getElementById("app")!);
