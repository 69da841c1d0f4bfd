// Drives an A2A agent with the third-party JavaScript SDK (@a2a-js/sdk), unchanged.
//
//   node stream.mjs <agent base url> <text> [--send] [--transport JSONRPC|HTTP+JSON]
//
// The SDK's ClientFactory fetches <base>/.well-known/agent-card.json with its own
// card resolver, picks the interface (protocol version 1.0 preferred by the SDK),
// and sends the text as a user message: streamed (Client.sendMessageStream) by
// default, or blocking (Client.sendMessage) with --send. At the end ONE JSON line
// goes to stdout:
//
//   {"kinds": [...], "text": "...", "finalState": "...", "taskId": "...", ...}
//
// kinds are the SDK's own StreamResponse payload cases, in order ("task",
// "statusUpdate", "artifactUpdate", "message"); finalState is the last task state
// as the SDK names it (e.g. "TASK_STATE_COMPLETED"). Set A2A_JS_TRACE=1 to log
// every HTTP request and response the SDK makes to stderr (the SDK's own fetch
// hook, the requests themselves are untouched). Exits 1 with a message on error.

import { randomUUID } from 'node:crypto';
import { Role, taskStateToJSON } from '@a2a-js/sdk';
import {
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
  RestTransportFactory,
} from '@a2a-js/sdk/client';

const TIMEOUT_MS = 120_000;

function usage(message) {
  process.stderr.write(`${message}\nusage: node stream.mjs <agent base url> <text> [--send] [--transport JSONRPC|HTTP+JSON]\n`);
  process.exit(2);
}

function parseArgs(argv) {
  const positional = [];
  const options = { send: false, transport: undefined };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--send') options.send = true;
    else if (arg === '--transport') options.transport = argv[++i] ?? usage('--transport needs a value');
    else if (arg.startsWith('--')) usage(`unknown option ${arg}`);
    else positional.push(arg);
  }
  if (positional.length !== 2) usage('expected exactly two arguments');
  return { baseUrl: positional[0], text: positional[1], ...options };
}

// A fetch that logs the wire traffic to stderr; only used when A2A_JS_TRACE is set.
function tracingFetch(input, init = {}) {
  const log = (line) => process.stderr.write(`[a2a-js trace] ${line}\n`);
  log(`> ${init.method ?? 'GET'} ${input} headers=${JSON.stringify(init.headers ?? {})}`);
  if (init.body) log(`> body ${init.body}`);
  return fetch(input, init).then(async (response) => {
    const headers = Object.fromEntries(response.headers.entries());
    log(`< ${response.status} ${input} headers=${JSON.stringify(headers)}`);
    if (!headers['content-type']?.startsWith('text/event-stream')) {
      log(`< body ${await response.clone().text()}`);
      return response;
    }
    // Tee the event stream: one branch for the log, one for the SDK.
    const [forLog, forSdk] = response.body.tee();
    (async () => {
      const decoder = new TextDecoder();
      for await (const chunk of forLog) log(`< sse ${JSON.stringify(decoder.decode(chunk, { stream: true }))}`);
    })().catch((error) => log(`< sse log failed: ${error}`));
    return new Response(forSdk, { status: response.status, statusText: response.statusText, headers: response.headers });
  });
}

function makeFactory(transport) {
  const overrides = {};
  if (transport) overrides.preferredTransports = [transport];
  if (process.env.A2A_JS_TRACE) {
    overrides.cardResolver = new DefaultAgentCardResolver({ fetchImpl: tracingFetch });
    overrides.transports = [
      new JsonRpcTransportFactory({ fetchImpl: tracingFetch }),
      new RestTransportFactory({ fetchImpl: tracingFetch }),
    ];
  }
  return new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, overrides));
}

function partsText(parts) {
  return (parts ?? [])
    .filter((part) => part.content?.$case === 'text')
    .map((part) => part.content.value)
    .join('');
}

function stateName(status) {
  return status ? taskStateToJSON(status.state) : undefined;
}

async function main() {
  const { baseUrl, text, send, transport } = parseArgs(process.argv.slice(2));
  const client = await makeFactory(transport).createFromUrl(baseUrl);
  const request = {
    tenant: '',
    message: {
      messageId: randomUUID(),
      contextId: '',
      taskId: '',
      role: Role.ROLE_USER,
      parts: [{ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: '' }],
      metadata: undefined,
      extensions: [],
      referenceTaskIds: [],
    },
    configuration: undefined,
    metadata: undefined,
  };
  const options = { signal: AbortSignal.timeout(TIMEOUT_MS) };
  const result = {
    kinds: [],
    text: '',
    finalState: undefined,
    taskId: undefined,
    transport: client.transport.protocolName,
    protocolVersion: client.protocolVersion,
  };

  if (send) {
    const answer = await client.sendMessage(request, options);
    if ('messageId' in answer) {
      result.kinds.push('message');
      result.text = partsText(answer.parts);
    } else {
      result.kinds.push('task');
      result.taskId = answer.id;
      result.finalState = stateName(answer.status);
      result.text = answer.artifacts.map((artifact) => partsText(artifact.parts)).join('');
    }
  } else {
    const artifacts = new Map(); // artifactId -> text, in order of first appearance
    for await (const event of client.sendMessageStream(request, options)) {
      const payload = event.payload;
      if (!payload) throw new Error(`stream event without payload: ${JSON.stringify(event)}`);
      result.kinds.push(payload.$case);
      const value = payload.value;
      if (payload.$case === 'task') {
        result.taskId ??= value.id;
        result.finalState = stateName(value.status) ?? result.finalState;
      } else if (payload.$case === 'statusUpdate') {
        result.taskId ??= value.taskId;
        result.finalState = stateName(value.status) ?? result.finalState;
      } else if (payload.$case === 'artifactUpdate') {
        result.taskId ??= value.taskId;
        const id = value.artifact?.artifactId ?? '';
        const chunk = partsText(value.artifact?.parts);
        artifacts.set(id, value.append ? (artifacts.get(id) ?? '') + chunk : chunk);
      }
    }
    result.text = [...artifacts.values()].join('');
  }
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

main().catch((error) => {
  const cause = error?.cause ? ` (cause: ${error.cause?.message ?? error.cause})` : '';
  process.stderr.write(`stream.mjs: ${error?.name ?? 'Error'}: ${error?.message ?? error}${cause}\n`);
  if (process.env.A2A_JS_TRACE && error?.stack) process.stderr.write(`${error.stack}\n`);
  process.exit(1);
});
