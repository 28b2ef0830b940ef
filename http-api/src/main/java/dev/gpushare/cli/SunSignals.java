package dev.gpushare.cli;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.function.Consumer;

/**
 * {@code sun.misc.Signal}, the JDK's only way to receive POSIX signals (module {@code
 * jdk.unsupported}, stable since Java 1.2 and kept on purpose), reached by reflection so that no
 * code names an internal API at compile time.
 */
final class SunSignals {
  private SunSignals() {}

  /**
   * Calls {@code handler} with {@code name} (INT, TERM, HUP…) on each such signal; answers what
   * puts the previous handler back. {@link IllegalArgumentException} when the JVM keeps the signal.
   */
  static Runnable handle(String name, Consumer<String> handler) {
    try {
      Class<?> signalClass = Class.forName("sun.misc.Signal");
      Class<?> handlerClass = Class.forName("sun.misc.SignalHandler");
      Object signal = signalClass.getConstructor(String.class).newInstance(name);
      Object ours =
          Proxy.newProxyInstance(
              SunSignals.class.getClassLoader(),
              new Class<?>[] {handlerClass},
              (proxy, method, args) -> {
                if (method.getName().equals("handle")) {
                  handler.accept(name);
                  return null;
                }
                if (method.getName().equals("toString")) {
                  return "gpushare forwarder of SIG" + name;
                }
                if (method.getName().equals("hashCode")) {
                  return System.identityHashCode(proxy);
                }
                if (method.getName().equals("equals")) {
                  return proxy == args[0];
                }
                return null;
              });
      Method handle = signalClass.getMethod("handle", signalClass, handlerClass);
      Object previous = handle.invoke(null, signal, ours);
      return () -> {
        try {
          handle.invoke(null, signal, previous);
        } catch (ReflectiveOperationException e) {
          throw new IllegalStateException("restoring the handler of SIG" + name, e);
        }
      };
    } catch (InvocationTargetException e) {
      if (e.getCause() instanceof IllegalArgumentException iae) {
        throw iae;
      }
      throw new IllegalStateException("installing a handler of SIG" + name, e.getCause());
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException(
          "this JVM has no sun.misc.Signal (module jdk.unsupported): cannot forward signals", e);
    }
  }
}
