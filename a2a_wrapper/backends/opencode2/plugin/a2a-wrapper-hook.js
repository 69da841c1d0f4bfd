// The a2a-wrapper's tool hook for OpenCode 2. The wrapper writes this file into the config folder it makes anew
// for its OpenCode at every start (plugins/; read-only in a sandbox). OpenCode 2's `execute.before` hook sees every
// tool call before it runs (a subagent's, and those nested in Code Mode), before OpenCode's own permission check:
// each goes to the wrapper over the Unix socket it serves in a read-only folder (a sandboxed OpenCode has no
// network). Only an explicit allow lets a call run: a refusal, an error or no answer blocks it, and the model sees
// the sentence (a thrown message is the tool's error).

const SOCKET = process.env.A2A_WRAPPER_HOOK_SOCKET
const UNREACHABLE =
  "The wrapper that checks every tool call could not be reached, so this call did not run. Do not retry it; " +
  "say what you wanted to do instead."

async function post(path, body) {
  const response = await fetch(`http://a2a-wrapper${path}`, {
    method: "POST",
    unix: SOCKET,
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
    timeout: false, // a call may wait minutes for a person's answer
  })
  if (!response.ok) throw new Error(`the wrapper answered ${response.status}`)
  return response.json()
}

export default {
  id: "a2a-wrapper-hook",
  setup: async (ctx) => {
    await ctx.tool.hook("execute.before", async (event) => {
      let verdict
      try {
        const call = { tool: event.tool, sessionID: event.sessionID, callID: event.id, args: event.input }
        verdict = await post("/tool", call)
      } catch {
        throw new Error(UNREACHABLE)
      }
      if (verdict?.decision !== "allow") throw new Error(String(verdict?.reason || UNREACHABLE))
    })
    // The wrapper runs no turn before it has heard this; a plugin that cannot say it still blocks every call.
    await post("/hello", { directory: ctx.directory ?? null }).catch(() => undefined)
  },
}
