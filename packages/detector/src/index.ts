export * from './core/index.js';
// The service a span without service.name is counted under (findings name it).
export { UNKNOWN_SERVICE } from './core/services.js';
export {
  ResumewatchSpanProcessor,
  primitiveAttributes,
  spanRecordOf,
  toSpanRecord,
  type ResumewatchSpanProcessorOptions,
} from './doors/processor.js';
export {
  groupFindings,
  formatFindingGroups,
  describeCounts,
  findingFacts,
  type FindingGroup,
  type FindingFormatOptions,
} from './doors/findings-format.js';
export { camelCaseOtlpFieldNames } from './doors/otlp-json-names.js';
// What a door in front of the core needs: the OTLP decoders and their responses, and the bounding of
// the strings the core keeps. The daemon (@resumewatch/daemon) builds serve and analyze from these.
export { IdBounder, boundSpanStrings, DEFAULT_MAX_ID_BYTES } from './doors/bounded-ids.js';
export {
  decodeJsonRequest,
  decodeProtobufRequest,
  OtlpDecodeError,
  encodeProtobufResponse,
  jsonResponse,
  rejectionMessage,
  protobufVarint,
  type DecodeResult,
} from './otlp/index.js';
