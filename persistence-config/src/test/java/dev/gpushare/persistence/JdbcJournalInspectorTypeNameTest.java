package dev.gpushare.persistence;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class JdbcJournalInspectorTypeNameTest {

  static final class Outer {
    record Inner() {}
  }

  @Test
  void topLevelClassIsItsSimpleName() {
    assertEquals("String", JdbcJournalInspector.typeName(String.class));
  }

  @Test
  void nestedClassesCarryTheirEnclosingClasses() {
    assertEquals("Counter.Added", JdbcJournalInspector.typeName(Counter.Added.class));
    assertEquals(
        "JdbcJournalInspectorTypeNameTest.Outer.Inner",
        JdbcJournalInspector.typeName(Outer.Inner.class));
  }

  @Test
  void anonymousClassesKeepTheirBinaryName() {
    Object anonymous = new Object() {};
    assertEquals(
        anonymous.getClass().getName(), JdbcJournalInspector.typeName(anonymous.getClass()));
  }
}
