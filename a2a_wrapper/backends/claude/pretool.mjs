// Claude Code's PreToolUse command hook, installed by a2a-wrap: every tool call, before it runs, is posted to the
// wrapper's tool hook socket (its path in argv[2]) and waits for the shield's decision. Only an explicit allow lets
// the call run. A deny is answered as one, its sentence for the model; an unreachable wrapper or anything unreadable
// blocks the call too (exit code 2: the reason on stderr goes to the model).
import { request } from "node:http";

const socketPath = process.argv[2];

function block(reason) {
  process.stderr.write(reason);
  process.exit(2);
}

function decide(call) {
  const body = JSON.stringify(call);
  const asked = request(
    { socketPath, path: "/tool", method: "POST", headers: { "content-type": "application/json" } },
    (response) => {
      let text = "";
      response.setEncoding("utf8");
      response.on("data", (piece) => (text += piece));
      response.on("end", () => {
        let answer;
        try {
          answer = JSON.parse(text);
        } catch {
          block("The wrapper's answer about this tool call could not be read, so it did not run.");
        }
        const allowed = answer.decision === "allow";
        const decided = {
          hookEventName: "PreToolUse",
          permissionDecision: allowed ? "allow" : "deny",
          permissionDecisionReason: allowed ? "" : String(answer.reason || "The wrapper denied this tool call."),
        };
        process.stdout.write(JSON.stringify({ hookSpecificOutput: decided }));
        process.exit(0);
      });
    },
  );
  asked.on("error", (error) => block(`The wrapper could not check this tool call (${error.message}); it did not run.`));
  asked.end(body);
}

let input = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (piece) => (input += piece));
process.stdin.on("end", () => {
  let event;
  try {
    event = JSON.parse(input);
  } catch {
    block("The tool call could not be read, so it did not run.");
  }
  decide({ sessionID: event.session_id, callID: event.tool_use_id, tool: event.tool_name, args: event.tool_input });
});
