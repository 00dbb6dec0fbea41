export { BoundedMap } from './bounded-map.js';
export { CappedLabels } from './capped-labels.js';
export { RecentList } from './recent-list.js';
