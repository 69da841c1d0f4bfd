// Drives an A2A agent with the third-party JavaScript SDK (@a2a-js/sdk), unchanged.
//
//   node stream.mjs <agent base url> <text> [--send] [--transport JSONRPC|HTTP+JSON] [--protocol 0.3]
//
// The SDK's ClientFactory fetches <base>/.well-known/agent-card.json with its own
// card resolver, picks the interface (protocol version 1.0 preferred by the SDK),
// and sends the text as a user message: streamed (Client.sendMessageStream) by
// default, or blocking (Client.sendMessage) with --send. --transport states the
// SDK's preferred binding; --protocol 0.3 keeps only the card's 0.3 interfaces and
// turns on the SDK's own v0.3 compatibility transports (legacyCompat), so the
// legacy wire format is spoken. At the end ONE JSON line goes to stdout:
//
//   {"kinds": [...], "text": "...", "finalState": "...", "taskId": "...", ...}
//
// kinds are the SDK's own StreamResponse payload cases, in order ("task",
// "statusUpdate", "artifactUpdate", "message"); finalState is the last task state
// as the SDK names it (e.g. "TASK_STATE_COMPLETED"); text is assembled the way
// the protocol says (append=false starts the artifact over); chunks lists every
// artifact update as the SDK decoded it ({text, append, lastChunk}). Set A2A_JS_TRACE=1 to log
// every HTTP request and response the SDK makes to stderr (the SDK's own fetch
// hook, the requests themselves are untouched). Exits 1 with a message on error.

import { randomUUID } from 'node:crypto';
import { Role, taskStateToJSON } from '@a2a-js/sdk';
import {
  AgentCardResolver,
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
  RestTransportFactory,
} from '@a2a-js/sdk/client';

const TIMEOUT_MS = 120_000;

function usage(message) {
  process.stderr.write(`${message}\nusage: node stream.mjs <agent base url> <text> [--send] [--transport JSONRPC|HTTP+JSON] [--protocol 0.3]\n`);
  process.exit(2);
}

function parseArgs(argv) {
  const positional = [];
  const options = { send: false, transport: undefined, protocol: undefined };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--send') options.send = true;
    else if (arg === '--transport') options.transport = argv[++i] ?? usage('--transport needs a value');
    else if (arg === '--protocol') options.protocol = argv[++i] ?? usage('--protocol needs a value');
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

function makeFactory(transport, legacy) {
  const overrides = {};
  if (transport) overrides.preferredTransports = [transport];
  const fetchImpl = process.env.A2A_JS_TRACE ? tracingFetch : undefined;
  if (fetchImpl || legacy) {
    const options = { fetchImpl, legacyCompat: legacy ? { enabled: true } : undefined };
    overrides.cardResolver = new DefaultAgentCardResolver(options);
    overrides.transports = [new JsonRpcTransportFactory(options), new RestTransportFactory(options)];
  }
  return new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, overrides));
}

async function makeClient(baseUrl, transport, protocol) {
  if (!protocol) return makeFactory(transport, false).createFromUrl(baseUrl);
  // A client pinned to one protocol version: the SDK's resolver fetches the card,
  // only that version's interfaces are kept, the SDK's factory picks among them.
  const factory = makeFactory(transport, protocol !== '1.0');
  const card = await (factory.options.cardResolver ?? AgentCardResolver.default).resolve(baseUrl);
  const interfaces = card.supportedInterfaces.filter((i) => i.protocolVersion === protocol);
  if (interfaces.length === 0) throw new Error(`the agent card advertises no protocol ${protocol} interface`);
  return factory.createFromAgentCard({ ...card, supportedInterfaces: interfaces });
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
  const { baseUrl, text, send, transport, protocol } = parseArgs(process.argv.slice(2));
  const client = await makeClient(baseUrl, transport, protocol);
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
    chunks: [],
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
        result.chunks.push({ text: chunk, append: value.append, lastChunk: value.lastChunk });
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
