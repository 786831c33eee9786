/**
 * A recorder of AI SDK runs (the `ai` package, 7 or later): an agent's
 * messages and tool calls as Mneme events, with no glue written by hand.
 *
 *     import { generateText } from "ai";
 *     import { Mneme } from "mneme-client";
 *     import { AiSdkRecorder } from "mneme-client/ai";
 *
 *     const recorder = new AiSdkRecorder(mneme, { agent: "coder", scope: "shared" });
 *     await generateText({ model, tools, prompt: "why does the login test fail?", ...recorder.callbacks() });
 *     await recorder.flush();
 *
 * What a run records, in the order it happened:
 * - the user's message that starts it (`message_recorded`, role `user`);
 * - each tool call, with its input, its output (or its error, exit code 1)
 *   and how long it ran (`tool_result_recorded`);
 * - each step's answer text (`message_recorded`, role `assistant`).
 *
 * A run's events share a `correlation_id`: the one given, or
 * `run-<the AI SDK's call id>`. They are published one after another, in
 * order; a publish that fails is counted (`failures`, `lastError`) and
 * handed to `onError`, and does not stop the run: the AI SDK catches what
 * its callbacks throw. `flush()` waits until everything is published.
 */

import type { GenerateTextStartEvent, GenerateTextStepEndEvent, ToolExecutionEndEvent } from "ai";

import type { Mneme } from "./client.js";
import { buildEvent } from "./events.js";
import type { Event, EventData, EventKind, Schemas } from "./types.js";

export type AiSdkRecorderOptions = {
  /** The swarm the events go to (the client's by default). */
  swarm?: string;
  /** The agent the run is recorded under (the client's by default). */
  agent?: string;
  /** Who sees what the events create (the agent's default scope when left out). */
  scope?: Schemas["Scope"];
  /** The events' `correlation_id` (the task); `run-<call id>` when left out. */
  correlationId?: string;
  /** Called with each failed publish. */
  onError?: (error: unknown) => void;
};

/** The callbacks `generateText`, `streamText` and the `ToolLoopAgent` take. */
export type AiSdkCallbacks = {
  onStart: (event: GenerateTextStartEvent) => Promise<void>;
  onToolExecutionEnd: (event: ToolExecutionEndEvent) => Promise<void>;
  onStepEnd: (event: GenerateTextStepEndEvent) => Promise<void>;
};

export class AiSdkRecorder {
  /** Publishes that failed. */
  failures = 0;
  /** The last publish's error, if one failed. */
  lastError: unknown = undefined;
  readonly swarm: string;
  readonly agent: string;
  #queue: Promise<void> = Promise.resolve();

  constructor(
    readonly mneme: Mneme,
    readonly options: AiSdkRecorderOptions = {},
  ) {
    const swarm = options.swarm ?? mneme.swarm;
    const agent = options.agent ?? mneme.agent;
    if (!swarm || !agent) throw new TypeError("no swarm or agent: pass them to the recorder or to the client");
    this.swarm = swarm;
    this.agent = agent;
  }

  /** Spread these into a call's options: `generateText({ ..., ...recorder.callbacks() })`. */
  callbacks(): AiSdkCallbacks {
    return {
      onStart: async (event) => {
        const last = event.messages.at(-1);
        if (last?.role !== "user") return;
        const text = textOf(last.content);
        if (text) this.#record(event.callId, "message_recorded", { role: "user", text });
      },
      onToolExecutionEnd: async ({ callId, toolCall, toolOutput, toolExecutionMs }) => {
        const failed = toolOutput.type === "tool-error";
        this.#record(callId, "tool_result_recorded", {
          tool: toolCall.toolName,
          args: toolCall.input,
          output: failed ? errorText(toolOutput.error) : outputText(toolOutput.output),
          exit_code: failed ? 1 : 0,
          duration_ms: Math.round(toolExecutionMs),
        });
      },
      onStepEnd: async (step) => {
        if (step.text.trim()) this.#record(step.callId, "message_recorded", { role: "assistant", text: step.text });
      },
    };
  }

  /** Waits until every event recorded so far is published (or failed). */
  flush(): Promise<void> {
    return this.#queue;
  }

  #record<K extends EventKind>(callId: string, kind: K, data: EventData<K>): void {
    const event: Event = buildEvent(this.swarm, this.agent, kind, data, {
      scope: this.options.scope,
      correlation_id: this.options.correlationId ?? `run-${callId}`,
    });
    this.#queue = this.#queue.then(async () => {
      try {
        await this.mneme.publish(event);
      } catch (error) {
        this.failures += 1;
        this.lastError = error;
        this.options.onError?.(error);
      }
    });
  }
}

/** The text of a message's content: a string, or its text parts joined. */
function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .filter((part): part is { type: "text"; text: string } => part?.type === "text" && typeof part.text === "string")
    .map((part) => part.text)
    .join("\n");
}

function outputText(output: unknown): string {
  return typeof output === "string" ? output : JSON.stringify(output);
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : typeof error === "string" ? error : JSON.stringify(error);
}
