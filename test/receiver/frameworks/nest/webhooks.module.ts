import { Controller, Inject, Module, Post, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import type { WebhookReceiver } from 'cliphook';

// Issue 32 item 3: the NestJS recipe of docs/receiver.md, as written there (only the receiver is given
// by the test, through the module's provider).

export const WEBHOOK_RECEIVER = Symbol('WEBHOOK_RECEIVER');

@Controller('webhooks')
export class WebhooksController {
  // Explicit @Inject: needs no emitDecoratorMetadata.
  constructor(@Inject(WEBHOOK_RECEIVER) private readonly receiver: WebhookReceiver) {}

  @Post()
  receive(@Req() req: Request, @Res() res: Response): Promise<void> {
    // req.rawBody is the Buffer NestFactory.create(AppModule, { rawBody: true }) keeps.
    return this.receiver.express()(req, res);
  }
}

export function webhooksModule(receiver: WebhookReceiver) {
  @Module({ controllers: [WebhooksController], providers: [{ provide: WEBHOOK_RECEIVER, useValue: receiver }] })
  class WebhooksModule {}
  return WebhooksModule;
}
