import { z } from 'zod';
import { mediaResponse } from '../../core/http/index.ts';

export const ServiceDocument = z
  .object({
    '@odata.context': z.string(),
    value: z.array(z.object({ name: z.string(), kind: z.literal('EntitySet'), url: z.string().describe('Relative to the service root: ws/coll/ds'), title: z.string() })),
  })
  .meta({ id: 'ODataServiceDocument' });

/** A page of rows, streamed as it is read (never through the serializer). */
export const RowsPage = mediaResponse('A page of rows; @odata.nextLink continues it', {
  'application/json': z
    .object({
      '@odata.context': z.string(),
      '@odata.count': z.number().int().optional().describe('With $count=true'),
      value: z.array(z.record(z.string(), z.unknown())),
      '@odata.nextLink': z.string().optional(),
    })
    .meta({ id: 'ODataRowsPage' }),
});

/** EDMX (CSDL XML), as built text. */
export const Metadata = mediaResponse('The EDMX (CSDL XML) document', { 'application/xml': z.string() });

export const LlmsTxt = mediaResponse('Directives for automated agents', { 'text/plain': z.string() });

/** One entity (a row, by its key), as DuckDB writes it. */
export const Entity = mediaResponse('One row, by its key (the row number in the version)', {
  'application/json': z.record(z.string(), z.unknown()).meta({ id: 'ODataEntity' }),
});

/** `…/$count`: the number of matching rows, as text. */
export const Count = mediaResponse('How many rows match $filter', { 'text/plain': z.string() });
