import { goldenSuite } from './helpers/golden-suite.js';

// Issue 40: "the gateway's and serve's findings are identical before and after, on every lab scenario".
// The cases of one group (helpers/golden-rig.ts: GOLDEN_GROUPS.sdk), each run once and seen by the gateway
// and by serve over OTLP/JSON and OTLP/protobuf, against golden/findings.json (`pnpm golden:update`).
goldenSuite('sdk');
