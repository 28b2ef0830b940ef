package dev.gpushare.node.api;

/**
 * Everything the edges (HTTP API, the Kubernetes sync, the CLI) may ask of the arbiter: what it
 * shows ({@link GpuShareReader}), what the control plane changes ({@link GpuShareWriter}) and what
 * a sharing pod asks about its own GPU ({@link GpuShareDataPlane}). One implementation serves all
 * three; each edge takes only the part it uses. Every stage completes exceptionally with a {@link
 * ServiceException} on refusal; a completed stage means the decision is durable (persisted) and
 * visible to the next read.
 */
public interface GpuShareService extends GpuShareReader, GpuShareWriter, GpuShareDataPlane {}
