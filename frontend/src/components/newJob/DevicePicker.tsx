import { deviceKey, type Gpu, type Recommendation, type RecommendStrategy } from "../../client/types";
import { GpuSelector } from "../GpuSelector";

interface Props {
  devices: Gpu[];
  selected: ReadonlySet<string>;
  onSelect: (next: Set<string>) => void;
  /** the user took the recommendation (these devices) */
  onUseRecommended: (next: Set<string>) => void;
  count: number;
  onCount: (count: number) => void;
  /** how many nodes a count may spread over (at most), on a lab of several nodes */
  nodes: number;
  onNodes: (nodes: number) => void;
  /** the nodes the devices are on */
  labNodes: number;
  /** why `nodes` cannot be, or null */
  nodesError: string | null;
  strategy: RecommendStrategy;
  onStrategy: (strategy: RecommendStrategy) => void;
  /** the recommendation made for the form as it is now; undefined while one is being made */
  recommendation: Recommendation | undefined;
  /** the recommender's error, if it failed */
  recommendationError: string | null;
  /** no recommendation is coming */
  recommendationUnavailable: boolean;
  bytesPerDevice: number | null;
  /** device key -> job id holding it, from a 409 */
  taken: ReadonlyMap<string, number | null>;
  /** the job will queue, so busy devices may be chosen (it waits for them) */
  canWait?: boolean;
}

function label(recommended: Recommendation["devices"] | undefined, failed: boolean): string {
  if (recommended && recommended.length > 0) return `Use recommended: GPU ${recommended.map((d) => d.index).join(", ")}`;
  return recommended || failed ? "no recommendation" : "recommending…";
}

/**
 * The "GPUs" card: how many (and, on a lab of several nodes, over at most how many nodes), how
 * to pick, the recommender's pick, and the devices.
 */
export function DevicePicker(props: Props) {
  const { devices, selected, onSelect, count, onCount, labNodes, strategy, onStrategy, recommendation, recommendationError } = props;
  const recommended = recommendation?.devices;
  // ticked devices are what is submitted, so the count shows their number and cannot disagree
  const ticked = selected.size > 0;
  return (
    <section className="card">
      <div className="section-head">
        <h2>GPUs</h2>
        <span className="muted small">{selected.size > 0 ? `${selected.size} selected` : `scheduler picks ${count}`}</span>
      </div>
      <div className="recommend">
        <label title={ticked ? "the ticked devices decide the count; clear them to choose by count" : undefined}>
          count{" "}
          <input
            type="number"
            min={1}
            max={64}
            value={ticked ? selected.size : count}
            disabled={ticked}
            onChange={(e) => onCount(Math.max(1, Number(e.target.value) || 1))}
            className="narrow"
            aria-label="device count"
          />
        </label>
        {!ticked && labNodes > 1 && (
          <label title="the count splits evenly over the fewest nodes with room, up to this many">
            on at most{" "}
            <input
              type="number"
              min={1}
              max={labNodes}
              value={props.nodes}
              onChange={(e) => props.onNodes(Math.min(labNodes, Math.max(1, Number(e.target.value) || 1)))}
              className="narrow"
              aria-label="node count"
            />{" "}
            nodes
          </label>
        )}
        {ticked && (
          <button type="button" className="link-button small" onClick={() => onSelect(new Set())} data-testid="clear-selection">
            clear selection
          </button>
        )}
        <select aria-label="strategy" value={strategy} onChange={(e) => onStrategy(e.target.value as RecommendStrategy)}>
          <option value="packed">packed</option>
          <option value="spread">spread</option>
          <option value="memory">most free memory</option>
        </select>
        <button
          type="button"
          className="button"
          data-testid="use-recommended"
          disabled={!recommended || recommended.length === 0}
          onClick={() => props.onUseRecommended(new Set(recommended?.map(deviceKey)))}
        >
          {label(recommended, props.recommendationUnavailable)}
        </button>
      </div>
      {props.nodesError && !ticked && (
        <p className="field-error" data-testid="nodes-error">
          {props.nodesError}
        </p>
      )}
      {recommendationError && <p className="field-error">No recommendation: {recommendationError}</p>}
      {recommendation && !recommendation.enough && <p className="field-error">{recommendation.message}</p>}
      <GpuSelector
        devices={devices}
        selected={selected}
        onChange={onSelect}
        bytesPerDevice={props.bytesPerDevice}
        excluded={recommendation?.excluded}
        taken={props.taken}
        canWait={props.canWait}
      />
    </section>
  );
}
