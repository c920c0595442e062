import type { ProblemCode } from '../../protocol/problem.js';

// The assistant endpoint's tools (spec 5.7), as the contract knows them (issue 31 item 2): each is named for
// the operation of the document it performs, so the test controls (a fault rule's `match.operation`, the
// request journal's `operation`) name a tool as they name a route.

/** Each tool of `/mcp` and the operationId whose codes it can answer (a fault rule's `problem` is checked against them). */
export const ASSISTANT_TOOLS = Object.freeze({
  list_effects: 'getPricing',
  create_clip: 'createVideo',
  create_clip_from_effect: 'createVideo',
  get_clip: 'getVideo',
  list_clips: 'listVideos',
  cancel_clip: 'deleteVideo',
  create_image: 'createImage',
  get_image: 'getImage',
  get_account: 'getAccount',
  get_topup_link: 'getAccount',
  start_photo_upload: 'uploadAsset',
  get_photo: 'getAsset',
  list_photos: 'listAssets',
} as const);

export type AssistantTool = keyof typeof ASSISTANT_TOOLS;

/** The tools' names, in the order above. */
export const ASSISTANT_TOOL_NAMES = Object.freeze(Object.keys(ASSISTANT_TOOLS) as AssistantTool[]);

/** Whether `name` is a tool of the assistant endpoint. */
export function isAssistantTool(name: string): name is AssistantTool {
  return Object.hasOwn(ASSISTANT_TOOLS, name);
}

/** A fault rule's or the journal's `operation`: an operationId (getVideo) or a tool's name (create_clip). */
export const OPERATION_NAME_PATTERN = /^[a-zA-Z][a-zA-Z0-9_]{0,63}$/;

/**
 * The refusal codes only the assistant's tools answer (spec 5.7's rules and the tools' own checks), with what
 * each means; every other refusal of a tool is a code of `/v1` (`PROBLEM_CODES`), passed on as it is.
 * Issue 31 item 3: declared once here; `refuse` takes only these or a problem code, and docs/service.md's
 * table of them is made from this.
 */
export const ASSISTANT_CODES = Object.freeze({
  daily_limit_reached: 'the call would take the assistant past its daily credit limit (rolling 24 hours)',
  too_many_running_clips: 'the assistant already has its most clips pending or rendering at once',
  unknown_effect: '`effect_id` is not an effect of list_effects',
  invalid_image_id: 'an `image_ids` entry is not one of the account\'s images made by create_image',
  image_not_animatable: 'an `image_ids` entry was edited from a photo of a real person (spec 2.7 `animate: no`): it stays an image',
  invalid_photo_id: 'a `photo_ids` entry is not one of the account\'s photos',
  photo_not_ready: 'a `photo_ids` entry is still being moderated',
  already_ended: 'cancel_clip of a clip that has already ended',
} as const);

/** A code only the assistant's tools answer. */
export type AssistantCode = keyof typeof ASSISTANT_CODES;

/** Every code a tool's refusal can carry: one of `/v1`'s problem codes, or one of the assistant's own. */
export type ToolCode = ProblemCode | AssistantCode;

/** Whether `code` is one of the assistant's own codes. */
export function isAssistantCode(code: string): code is AssistantCode {
  return Object.hasOwn(ASSISTANT_CODES, code);
}

/** The table of the assistant's own codes in docs/service.md. */
export function assistantCodeTable(): string {
  const rows = Object.entries(ASSISTANT_CODES).map(([code, meaning]) => `| \`${code}\` | ${meaning} |`);
  return ['| code | when |', '|---|---|', ...rows].join('\n');
}
