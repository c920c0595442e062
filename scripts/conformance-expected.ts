// The MCP conformance scenarios that do not apply to cliphook's assistant endpoint, and why. Read by
// scripts/conformance.ts, listed in docs/service.md. Everything not named here must pass; a scenario (or a
// check) named here that passes makes the run fail too, so the list cannot go stale.

export interface NotApplicable {
  why: string;
  /** Only these checks of the scenario do not apply; its other checks must pass. All of them when absent. */
  checks?: readonly string[];
}

const FIXTURE_TOOLS = "calls a tool of the suite's reference server (`test_…`); the service's tools are its own (spec 5.7)";
const NO_RESOURCES = 'the endpoint offers tools only (spec 5.7): no resources, so `resources/*` is Method not found, as it should be';
const NO_PROMPTS = 'the endpoint offers tools only (spec 5.7): no prompts, so `prompts/*` is Method not found, as it should be';
const NO_INPUT = "calls a tool of the suite's reference server that asks the client for input; the service's tools never do";

export const NOT_APPLICABLE: Readonly<Record<string, NotApplicable>> = {
  'logging-set-level': { why: 'no `logging` capability: the tools report through their results' },
  'completion-complete': { why: 'no prompts or resource templates, so nothing to complete (no `completions` capability)' },
  'tools-call-simple-text': { why: FIXTURE_TOOLS },
  'tools-call-image': { why: FIXTURE_TOOLS },
  'tools-call-audio': { why: FIXTURE_TOOLS },
  'tools-call-embedded-resource': { why: FIXTURE_TOOLS },
  'tools-call-mixed-content': { why: FIXTURE_TOOLS },
  'tools-call-with-logging': { why: FIXTURE_TOOLS },
  'tools-call-error': { why: FIXTURE_TOOLS },
  'tools-call-with-progress': { why: FIXTURE_TOOLS },
  'tools-call-sampling': { why: FIXTURE_TOOLS },
  'tools-call-elicitation': { why: FIXTURE_TOOLS },
  'elicitation-sep1034-defaults': { why: FIXTURE_TOOLS },
  'elicitation-sep1330-enums': { why: FIXTURE_TOOLS },
  'json-schema-2020-12': { why: FIXTURE_TOOLS },
  'resources-list': { why: NO_RESOURCES },
  'resources-read-text': { why: NO_RESOURCES },
  'resources-read-binary': { why: NO_RESOURCES },
  'resources-templates-read': { why: NO_RESOURCES },
  'resources-subscribe': { why: NO_RESOURCES },
  'resources-unsubscribe': { why: NO_RESOURCES },
  'prompts-list': { why: NO_PROMPTS },
  'prompts-get-simple': { why: NO_PROMPTS },
  'prompts-get-with-args': { why: NO_PROMPTS },
  'prompts-get-embedded-resource': { why: NO_PROMPTS },
  'prompts-get-with-image': { why: NO_PROMPTS },
  'input-required-result-basic-elicitation': { why: NO_INPUT },
  'input-required-result-basic-sampling': { why: NO_INPUT },
  'input-required-result-basic-list-roots': { why: NO_INPUT },
  'input-required-result-request-state': { why: NO_INPUT },
  'input-required-result-multiple-input-requests': { why: NO_INPUT },
  'input-required-result-multi-round': { why: NO_INPUT },
  'input-required-result-non-tool-request': { why: `${NO_INPUT} (it asks through prompts/get, which does not exist here)` },
  'input-required-result-result-type': { why: NO_INPUT },
  'input-required-result-tampered-state': { why: NO_INPUT },
  'input-required-result-capability-check': { why: NO_INPUT },
  'http-custom-header-server-validation': { why: 'no tool declares `x-mcp-header` parameters (SEP-2243 custom headers)' },
  'tasks-lifecycle': { why: 'the tasks extension is not offered: tools answer at once, or wait up to 45 s and return the clip' },
  'tasks-capability-negotiation': { why: 'the tasks extension is not offered' },
  'tasks-wire-fields': { why: 'the tasks extension is not offered' },
  'tasks-request-state-removal': { why: 'the tasks extension is not offered' },
  'tasks-mrtr-input': { why: 'the tasks extension is not offered' },
  'tasks-request-headers': { why: 'the tasks extension is not offered' },
  'tasks-dispatch-and-envelope': { why: 'the tasks extension is not offered' },
  'tasks-required-task-error': { why: 'the tasks extension is not offered' },
  'tasks-mrtr-composition': { why: 'the tasks extension is not offered' },
  'server-stateless': {
    why: "these checks need the suite's diagnostic tools (`test_missing_capability`, `test_streaming_elicitation`, `test_logging_tool`); the scenario's other checks apply and pass",
    checks: ['sep-2575-server-rejects-undeclared-capability', 'sep-2575-missing-capability-http-400', 'sep-2575-http-server-no-independent-requests-on-stream', 'sep-2575-server-no-log-without-loglevel'],
  },
  caching: {
    why: 'no prompts and no resources, so their lists answer Method not found; the caching hints of tools/list apply and pass',
    checks: ['sep-2549-prompts-list-caching-hints', 'sep-2549-resources-list-caching-hints', 'sep-2549-resources-templates-list-caching-hints'],
  },
};
