import type { AssistantEndpoint } from '../assistant/endpoint.js';
import type { ServiceApp } from './app.js';

/**
 * The app's assistant endpoint with its whole class (sign-in, authorization server, spending), for the
 * service's own tests. `ServiceApp` names only `ServiceAssistant`, so the published
 * declarations reach no OAuth-server, Koa or MCP SDK type; this module is not exported by the package.
 */
export function assistantEndpoint(app: ServiceApp): AssistantEndpoint | null {
  // createServiceApp defines `assistant` as the AssistantEndpoint it made (or null).
  return app.assistant as AssistantEndpoint | null;
}
