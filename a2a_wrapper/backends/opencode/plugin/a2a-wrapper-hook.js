// The a2a-wrapper's tool hook. The wrapper writes this file into the config folder it makes anew for its OpenCode
// at every start (plugin/; read-only in a sandbox). OpenCode's own permission requests come only when its parse of
// a call says so (`>README.md` asks nothing), so every tool call goes to the wrapper here, before it runs, over the
// Unix socket the wrapper serves in a read-only folder (a sandboxed OpenCode has no network). Only an explicit allow lets a call run: a
// refusal, an error or no answer blocks it, and the model sees the sentence (a thrown message is the tool's error).
// Every export of a plugin module must be a plugin function: nothing else is exported.

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

export default async function a2aWrapperHook({ directory }) {
  // The wrapper runs no turn before it has heard this; a plugin that cannot say it still blocks every call.
  await post("/hello", { directory }).catch(() => undefined)
  return {
    "tool.execute.before": async (input, output) => {
      let verdict
      try {
        const call = { tool: input.tool, sessionID: input.sessionID, callID: input.callID, args: output.args }
        verdict = await post("/tool", call)
      } catch {
        throw new Error(UNREACHABLE)
      }
      if (verdict?.decision !== "allow") throw new Error(String(verdict?.reason || UNREACHABLE))
    },
  }
}
