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
